package config

import (
	"crypto/tls"
	"time"

	"github.com/activemq-go/broker/destinations/policy"
)

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
	// DefaultMaxFrameSizeBeforeLogin bounds a frame until the client has logged in:
	// a CONNECT (or OpenWire's WireFormatInfo and ConnectionInfo) with a long login
	// and passcode fits, a client that has not shown who it is holds little.
	DefaultMaxFrameSizeBeforeLogin = 16 << 10
	// DefaultMaxPendingLogins caps the connections, all connectors together, that
	// have not logged in yet: each holds at most DefaultMaxFrameSizeBeforeLogin and
	// a read buffer (16 KiB for STOMP, 32 KiB for OpenWire), some 16 to 24 MiB in
	// all for clients that have not shown who they are.
	DefaultMaxPendingLogins = 500

	// An OpenWire connector's defaults are ActiveMQ's for OpenWire: frames up to
	// 100 MiB, a connection silent for 30 s dropped, that check starting 10 s after
	// the handshake.
	DefaultOpenWireMaxFrameSize              = 104857600
	DefaultMaxInactivityDuration             = 30 * time.Second
	DefaultMaxInactivityDurationInitialDelay = 10 * time.Second

	// DefaultSchedulerSupport differs from ActiveMQ (false) on purpose: STOMP
	// clients use AMQ_SCHEDULED_* headers without touching activemq.xml, and a
	// broker that silently delivers a delayed message at once surprises them.
	DefaultSchedulerSupport                     = true
	DefaultOfflineDurableSubscriberTaskSchedule = 5 * time.Minute // ActiveMQ's 300000 ms
	DefaultAllowLinkStealing                    = false
	// DefaultAdminAddress is where the admin listener listens: ActiveMQ's console
	// port, on loopback only.
	DefaultAdminAddress    = "127.0.0.1:8161"
	DefaultAdvisorySupport = true // as ActiveMQ

	// The other defaults of systemUsage are the broker's (package broker/limits).
	DefaultStoreUsage        = 100 << 30 // 100gb, as in ActiveMQ's shipped activemq.xml
	DefaultSendFailIfNoSpace = false     // as ActiveMQ: the producer is held until there is room
	// MinUsageLimit is the smallest systemUsage.memoryUsage or storeUsage accepted.
	MinUsageLimit = 1 << 20 // 1mb
	// MinSchedulerMemoryLimit is the smallest systemUsage.schedulerMemoryLimit
	// accepted.
	MinSchedulerMemoryLimit = 64 << 10 // 64kb

	DefaultStreamsFlush       = FlushBatch
	DefaultFlushInterval      = time.Second
	DefaultSegmentBytes       = 1 << 30 // 1gb
	DefaultSegmentMs          = 168 * time.Hour
	DefaultIndexIntervalBytes = 4 << 10 // 4kb
	// DefaultKafkaClientID and DefaultKafkaSessionTimeout are streams.kafka's.
	DefaultKafkaClientID       = "activemq-go"
	DefaultKafkaSessionTimeout = 10 * time.Second

	DefaultVirtualTopicsEnabled = true
	DefaultVirtualTopicName     = "VirtualTopic.>"
	DefaultVirtualTopicPrefix   = "Consumer.*."
)

// Streams.Flush values: when the stream log is fsynced.
const (
	FlushBatch    = "batch"    // after each batch of appends (group commit)
	FlushInterval = "interval" // every Streams.FlushInterval
	FlushOS       = "os"       // never explicitly; the operating system writes back
)

// Config is a validated configuration. Every field is set: what the file and the
// environment leave out has its default.
type Config struct {
	Broker              Broker
	Persistence         Persistence
	TransportConnectors []Connector
	SystemUsage         SystemUsage
	// DestinationPolicy is the destinationPolicy list in file order, each entry
	// complete (policy.Policy.Complete); nil when the file has none.
	// policy.Select picks the entry of a destination: the most specific matching
	// entry applies whole, and policy.Default when none matches.
	DestinationPolicy []policy.Policy
	Streams           Streams
	VirtualTopics     VirtualTopics
	// SSLContext holds the certificate of the TLS connectors, loaded and checked.
	SSLContext SSLContext
	// Plugins is who may connect and what they may do (authentication,
	// authorization); without a user source every client is let in anonymously.
	Plugins Plugins
	// Metrics is what the admin listener's GET /metrics exports per destination.
	Metrics Metrics
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
	// SchedulerSupport makes the broker honour the AMQ_SCHEDULED_DELAY, _PERIOD,
	// _REPEAT and _CRON headers (default true; ActiveMQ's default is false, see
	// DefaultSchedulerSupport). When false those headers are ignored and the
	// message is delivered at once, as in ActiveMQ.
	SchedulerSupport bool `mapstructure:"schedulerSupport"`
	// OfflineDurableSubscriberTaskSchedule is how often the broker looks for
	// offline durable subscriptions past their destination's
	// offlineDurableSubscriberTimeout (default 5m; more than 0).
	OfflineDurableSubscriberTaskSchedule time.Duration `mapstructure:"offlineDurableSubscriberTaskSchedule"`
	// AllowLinkStealing lets a CONNECT whose client-id is that of a live
	// connection close the old connection and take its place; when false (the
	// default) the new CONNECT fails, as in ActiveMQ.
	AllowLinkStealing bool `mapstructure:"allowLinkStealing"`
	// AdvisorySupport publishes ActiveMQ's advisory messages on the topics under
	// ActiveMQ.Advisory. (connections, consumers, destinations, expired and
	// dead-lettered messages, slow consumers), as ActiveMQ's advisorySupport does
	// (default true). When false those are topics like others, on which nothing is
	// published.
	AdvisorySupport bool `mapstructure:"advisorySupport"`
	// AdminAddress is where the admin listener serves the web console, the REST API
	// (/api/), /metrics and /stats (default DefaultAdminAddress, loopback; "" for
	// none; a host-less ":8161" listens on loopback too).
	AdminAddress string `mapstructure:"adminAddress"`
	// StatsAddress is AdminAddress's older name, from when the listener served only
	// /stats: a file or variable setting it alone sets AdminAddress. After Load both
	// hold the address in use.
	StatsAddress string `mapstructure:"statsAddress"`
	// AdminGroups are the groups whose users may use the admin listener when
	// authentication is configured (default [admins]; at least one).
	// plugins.adminGroups is its older place: this key wins when both are set, and
	// after Load both hold the groups in use.
	AdminGroups Names `mapstructure:"adminGroups"`
	// MonitorGroups are the groups whose users may read on the admin listener what
	// an administrator reads (the API's GETs, Jolokia's reads, /stats, /metrics,
	// the console's pages) and change nothing: 403 for the rest (default none).
	MonitorGroups Names `mapstructure:"monitorGroups"`
	// AdminAllowedHosts are the host names the admin listener's requests may name
	// in their Host header besides the defaults, as a WebSocket connector's
	// allowedHosts (default none: any IP address, localhost, and the machine's
	// host name when the listener listens on every interface). Others get 421.
	AdminAllowedHosts Names `mapstructure:"adminAllowedHosts"`
	// AdminTLS makes the admin listener serve HTTPS with the certificate of the
	// sslContext section, the TLS connectors' (default false).
	AdminTLS bool `mapstructure:"adminTLS"`
	// AdminClientAuth asks the admin listener's HTTPS clients for a certificate of
	// sslContext.clientCAFile, as a TLS connector's options do: "none" (the
	// default; "" too), "want" (wantClientAuth) or "need" (needClientAuth). The user still
	// logs in: the certificate only lets the connection through.
	AdminClientAuth string `mapstructure:"adminClientAuth"`
	// PopulateJMSXUserID sets the JMSXUserID header of every message a client sends
	// to the user its connection authenticated as, replacing any the client set
	// (default false, as ActiveMQ).
	PopulateJMSXUserID bool `mapstructure:"populateJMSXUserID"`
	// UseAuthenticatedPrincipalForJMSXUserID makes PopulateJMSXUserID use the user
	// the login produced (for a TLS client certificate, the user certificateUsers
	// maps its subject DN to) instead of the login header as the client sent it
	// (default false, as ActiveMQ). It has no effect without PopulateJMSXUserID.
	UseAuthenticatedPrincipalForJMSXUserID bool `mapstructure:"useAuthenticatedPrincipalForJMSXUserID"`
	// MaxPendingLogins caps the connections, all connectors together, accepted and
	// not yet logged in (STOMP's CONNECT, OpenWire's ConnectionInfo not yet
	// accepted; default DefaultMaxPendingLogins; at least 1): one more gets an ERROR
	// naming the limit and is closed (an OpenWire one is closed), with a log line
	// once a minute.
	MaxPendingLogins int `mapstructure:"maxPendingLogins"`
}

// SystemUsage is the systemUsage section: broker-wide limits, ActiveMQ's
// <systemUsage>. What happens to a producer over a limit:
//
//	SendFailIfNoSpace  SendFailIfNoSpaceAfterTimeout  producer
//	false (default)    0 (default)                    waits until there is space
//	true               0                              gets an ERROR at once
//	either             > 0                            waits up to the timeout, then gets an ERROR
type SystemUsage struct {
	// MemoryUsage caps the bytes of messages held in memory, broker-wide
	// (default 1gb; at least 1mb).
	MemoryUsage int64
	// StoreUsage caps the room the persistent store may use (default 100gb; at
	// least 1mb): the files of kahaDB and kafkaLog, the pages of the bbolt file in
	// use, an estimate of the jdbc rows (their bodies plus about 256 bytes each), the
	// messages the memory adapter holds.
	StoreUsage int64
	// SendFailIfNoSpace fails a send over a limit instead of making the producer
	// wait (default false, as ActiveMQ: the producer's SEND is held, and its
	// connection no longer read, until a consumer frees room; its RECEIPT comes
	// then). A held connection still gets its MESSAGEs and heart-beats, and its
	// ACKs pass the held SEND.
	SendFailIfNoSpace bool
	// SendFailIfNoSpaceAfterTimeout, when more than 0, makes a send over a limit
	// wait this long for space and then fail (default 0).
	SendFailIfNoSpaceAfterTimeout time.Duration
	// MaxTransactionSize caps the bytes of messages one open transaction may hold
	// until its COMMIT (default 64mb; at least 1kb); past it the SEND gets an ERROR.
	MaxTransactionSize int64
	// MaxTransactionsPerConnection caps the transactions one connection may have
	// open at once (default 64; at least 1); a BEGIN past it gets an ERROR.
	MaxTransactionsPerConnection int
	// MaxDestinations caps the queues and topics (temporary ones included) that
	// clients' SENDs and SUBSCRIBEs may create (default 1000000; at least 1); past it
	// the frame gets an ERROR. Advisory topics (ActiveMQ.Advisory.>) neither count nor
	// are refused; dead-letter queues and the destinations recovered from the store
	// are never refused, but count.
	MaxDestinations int
	// MaxSubscriptionsPerConnection caps the subscriptions, queue browsers included,
	// one connection may have at once (default 10000; at least 1); a SUBSCRIBE past
	// it gets an ERROR.
	MaxSubscriptionsPerConnection int
	// MaxDurableSubscriptions caps the durable topic subscriptions clients may
	// create, broker-wide (default 10000; at least 1); a SUBSCRIBE that would create
	// one past it gets an ERROR. Those recovered from the store are never refused,
	// but count.
	MaxDurableSubscriptions int
	// MaxTemporaryDestinationsPerConnection caps the temporary queues and topics one
	// connection may have at once (default 1000; at least 1); a frame that would make
	// one more gets an ERROR.
	MaxTemporaryDestinationsPerConnection int
	// SchedulerMemoryLimit caps the bytes of persistent scheduled messages held in
	// memory, the soonest due; the others wait in the store (default 32mb; at least
	// 64kb). Non-persistent scheduled messages count against MemoryUsage.
	SchedulerMemoryLimit int64
}

// Streams is the streams section: the partitioned log behind destinations whose
// policy has type: stream.
type Streams struct {
	// Directory holds the log. Without one in the file it is resolved here to
	// filepath.Join(Broker.DataDirectory, "streams") ("data/streams" by default),
	// relative when the data directory is.
	Directory string
	// Flush is when appends are fsynced: FlushBatch (default), FlushInterval or
	// FlushOS.
	Flush string
	// FlushInterval is the fsync period of FlushInterval (default 1s; more than 0;
	// kept whatever Flush says).
	FlushInterval time.Duration
	// SegmentBytes rolls a segment at this size (default 1gb; more than 0).
	SegmentBytes int64
	// SegmentMs rolls a segment at this age, like Kafka's segment.ms (default
	// 168h; more than 0).
	SegmentMs time.Duration
	// IndexIntervalBytes is the number of log bytes between two index entries
	// (default 4kb; more than 0).
	IndexIntervalBytes int64
	// Engine keeps the streams: StreamsEmbedded (default: kafkalog in Directory, with
	// the keys above) or StreamsKafka (an Apache Kafka cluster, Kafka).
	Engine string
	// Kafka is the cluster of engine kafka.
	Kafka KafkaStreams
}

// VirtualTopics is the virtualTopics section, ActiveMQ's virtualTopic
// interceptor: a message sent to a topic matching Name is also put on every
// queue named Prefix, with its "*" replaced by a consumer group, followed by the
// topic's name. With the defaults, a message sent to topic VirtualTopic.Orders is
// consumed from queues Consumer.A.VirtualTopic.Orders, Consumer.B.VirtualTopic.Orders,
// and so on.
type VirtualTopics struct {
	// Enabled turns the interceptor on (default true).
	Enabled bool `mapstructure:"enabled"`
	// Name is the pattern of the topics that fan out (default "VirtualTopic.>";
	// ActiveMQ wildcards, ">" only as the last element).
	Name string `mapstructure:"name"`
	// Prefix makes the consumer queue's name (default "Consumer.*."); exactly one
	// of its "."-separated elements is "*", the group name.
	Prefix string `mapstructure:"prefix"`
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
	// values set from the environment are always strings. internal/setting's ParseSize,
	// ParseDuration, WholeNumber and Bool read them.
	Options map[string]any
}

// Connector is one validated transport connector.
type Connector struct {
	// Name is the connector's name, unique in the file.
	Name string
	// URI is the uri as written, for logs.
	URI string
	// Scheme is the protocol: "openwire" for tcp, nio, ssl and nio+ssl (ActiveMQ's
	// own protocol, its Java client's), "stomp" for the others (the "+nio" variants
	// are accepted and normalised); TLS and WebSocket say how it is carried.
	Scheme string
	// OpenWire is true for tcp, nio, ssl and nio+ssl: the connector speaks OpenWire.
	OpenWire bool
	// MaxInactivityDuration is how long an OpenWire connection may stay silent
	// before it is dropped (wireFormat.maxInactivityDuration, ms; default 30 s; 0:
	// never), and MaxInactivityInitialDelay how long after the handshake that check
	// starts (wireFormat.maxInactivityDurationInitalDelay, ActiveMQ's spelling;
	// default 10 s).
	MaxInactivityDuration     time.Duration
	MaxInactivityInitialDelay time.Duration
	// TLS is true for stomp+ssl, stomp+nio+ssl and wss: the connector serves
	// TLS 1.2 or later with the sslContext section's certificate.
	TLS bool
	// WebSocket is true for ws and wss: STOMP frames in WebSocket messages, after
	// an HTTP upgrade on any path.
	WebSocket bool
	// ClientAuth is what a TLS connector asks of the client's certificate:
	// tls.NoClientCert (default), tls.VerifyClientCertIfGiven
	// (transport.wantClientAuth | wantClientAuth) or tls.RequireAndVerifyClientCert
	// (transport.needClientAuth | needClientAuth). Either needs
	// sslContext.clientCAFile, which verifies the certificate.
	ClientAuth tls.ClientAuthType
	// CipherSuites are a TLS connector's TLS 1.2 cipher suites
	// (transport.enabledCipherSuites | enabledCipherSuites, comma-separated suite
	// names): nil for sslContext's (DefaultCipherSuites unless widened), empty for
	// TLS 1.3 only.
	CipherSuites []uint16
	// Addr is host:port to listen on; the port may be 0 for any free port and the
	// host may be empty for all interfaces.
	Addr string
	// MaxConnections caps concurrent connections (maximumConnections |
	// maxConnections; default 1000; at least 1).
	MaxConnections int
	// MaxFrameSize caps a whole frame, headers and body, in bytes
	// (wireFormat.maxFrameSize | maxFrameSize; default 10485760; at least 1024).
	MaxFrameSize int64
	// MaxFrameSizeBeforeLogin caps a frame read before the client has logged in
	// (maxFrameSizeBeforeLogin; default DefaultMaxFrameSizeBeforeLogin, at least
	// 1024; never more than MaxFrameSize): STOMP frames until CONNECT succeeds,
	// OpenWire commands until ConnectionInfo is accepted. A bigger one gets an ERROR
	// (OpenWire: a ConnectionError) naming the limit and the connection is closed.
	MaxFrameSizeBeforeLogin int64
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
	// AllowedOrigins are the Origin host patterns a WebSocket connector accepts
	// besides its own host (allowedOrigins, comma-separated; ws and wss only), as
	// coder/websocket's AcceptOptions.OriginPatterns: host or host:port, matched
	// case-insensitively with path.Match ("*.example.com", "*" for any), or
	// scheme://host to match the scheme too. Empty (the default): only pages
	// served from the connector's own host may connect. A request without an
	// Origin header (not a browser) is always accepted.
	AllowedOrigins []string
	// AllowedHosts are the host names a browser's WebSocket handshake (one with an
	// Origin) may name in its Host header besides the defaults (allowedHosts, comma-separated; ws
	// and wss only; see package allowedhosts: names or path.Match patterns, no
	// port, "*" for any). The defaults: any IP address, localhost, and the
	// machine's host name when the connector listens on every interface. Others
	// get 421: the defence against DNS rebinding.
	AllowedHosts []string
}

// Default returns the configuration of an empty file with an empty environment:
// broker "localhost" in ./data, persistent, the memory adapter, one STOMP
// connector named "stomp" on 127.0.0.1:61613 with default limits, no
// destinationPolicy entries, and every other section at its defaults.
func Default() *Config {
	c, err := Parse(nil, nil)
	if err != nil {
		panic("config: the defaults do not validate: " + err.Error())
	}
	return c
}
