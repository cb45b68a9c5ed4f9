package config

import "time"

// Defaults, as ActiveMQ has them where ActiveMQ has the setting.
const (
	DefaultBrokerName    = "localhost"
	DefaultDataDirectory = "./data"
	DefaultPersistent    = true
	// DefaultAdapter is the adapter of a file without a persistenceAdapter section.
	DefaultAdapter = "memory"
	// DefaultConnectorName and DefaultConnectorURI make the one connector of a
	// file without a transportConnectors section.
	DefaultConnectorName = "stomp"
	DefaultConnectorURI  = "stomp://127.0.0.1:61613"

	DefaultMaxConnections  = 1000
	DefaultMaxFrameSize    = 10485760  // 10 MiB, ActiveMQ's wireFormat.maxFrameSize
	DefaultMaxDataLength   = 104857600 // 100 MiB, ActiveMQ's wireFormat.maxDataLength
	DefaultMaxHeaders      = 1000
	DefaultMaxHeaderLength = 10240
	DefaultConnectTimeout  = 30 * time.Second
	DefaultHeartBeatGrace  = 1.5
)

// Config is a validated configuration. Every field is set: what the file and the
// environment leave out has its default.
type Config struct {
	Broker              Broker
	Persistence         Persistence
	TransportConnectors []Connector
	// Source is the file the configuration came from; "" for Parse.
	Source string
	// IgnoredEnv lists BROKER_ variables whose first key names no section of this
	// file (such as Celery's BROKER_URL): they belong to other programs and are left
	// alone; the caller logs them so a misspelt section name is still noticed.
	IgnoredEnv []string
}

// Broker is the broker section, named after the attributes of ActiveMQ's <broker>.
type Broker struct {
	// BrokerName names this broker in logs and stores (default "localhost").
	BrokerName string `mapstructure:"brokerName"`
	// DataDirectory is the base directory of the file-based stores (default
	// "./data"). A relative path is returned as written; the caller resolves it
	// against the process's working directory.
	DataDirectory string `mapstructure:"dataDirectory"`
	// Persistent false forces the memory adapter whatever persistenceAdapter says,
	// as <broker persistent="false"> does (default true).
	Persistent bool `mapstructure:"persistent"`
}

// Persistence names the store adapter and carries its options.
type Persistence struct {
	// Adapter is the canonical adapter name, the one adapters register under:
	// "memory", "kahadb", "bbolt", "jdbc" or "kafkalog".
	Adapter string
	// Key is the adapter's YAML key in its canonical spelling: memory, kahaDB,
	// bbolt, jdbc or kafkaLog.
	Key string
	// Options is the adapter's own block, never nil, handed over undecoded for the
	// adapter to decode and validate. Keys are lower-cased (journalMaxFileLength
	// arrives as "journalmaxfilelength"), at every depth; values are what YAML made
	// of them (string, int, float64, bool, []any, map[string]any), except that
	// values set from the environment are always strings. ParseSize and
	// ParseDuration help with sizes and durations.
	Options map[string]any
}

// Connector is one validated transport connector.
type Connector struct {
	// Name is the connector's name, unique in the file.
	Name string
	// URI is the uri as written, for logs.
	URI string
	// Scheme is the protocol: "stomp" ("stomp+nio" is accepted and normalised).
	Scheme string
	// Addr is host:port to listen on; the port may be 0 for any free port and the
	// host may be empty for all interfaces.
	Addr string
	// MaxConnections caps concurrent connections (maximumConnections |
	// maxConnections; default 1000; at least 1).
	MaxConnections int
	// MaxFrameSize caps a whole frame, headers and body, in bytes
	// (wireFormat.maxFrameSize | maxFrameSize; default 10485760; at least 1024).
	MaxFrameSize int64
	// MaxDataLength caps a body in bytes (wireFormat.maxDataLength; default
	// 104857600); the effective body cap is the smaller of this and MaxFrameSize.
	MaxDataLength int64
	// MaxHeaders caps the number of headers in a frame (wireFormat.maxHeaders |
	// maxHeaders; default 1000).
	MaxHeaders int
	// MaxHeaderLength caps one header line in bytes (wireFormat.maxHeaderLength |
	// maxHeaderLength; default 10240).
	MaxHeaderLength int
	// ConnectTimeout is how long a new connection may take to send CONNECT
	// (transport.connectAttemptTimeout | connectTimeout; default 30s; 0 means no
	// limit).
	ConnectTimeout time.Duration
	// HeartBeatGrace multiplies the client's promised heart-beat interval before
	// the connection is declared dead (transport.hbGracePeriodMultiplier |
	// hbGracePeriodMultiplier; default 1.5; at least 1.0).
	HeartBeatGrace float64
	// DefaultHeartBeat is the heart-beat (client sends, client wants) applied when
	// a client's CONNECT has none (transport.defaultHeartBeat "x,y" in ms; default
	// 0,0: none).
	DefaultHeartBeat [2]time.Duration
}

// Default returns the configuration of an empty file with an empty environment:
// broker "localhost" in ./data, persistent, the memory adapter, and one STOMP
// connector named "stomp" on 127.0.0.1:61613 with default limits.
func Default() *Config {
	c, err := Parse(nil, nil)
	if err != nil {
		panic("config: the defaults do not validate: " + err.Error())
	}
	return c
}
