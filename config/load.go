package config

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/activemq-go/broker/broker/limits"
)

// Load reads the configuration file at path and does everything Parse does, with
// the process environment. Config.Source is path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{Value: path, Problem: readProblem("cannot read the configuration file", err), Err: err}
	}
	c, perr := parse(data, os.Environ(), path)
	if perr != nil {
		return nil, perr
	}
	return c, nil
}

// readProblem is what an Error says of a file that cannot be read: what, and
// the cause without the path the Error shows already.
func readProblem(what string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return what + ": " + pe.Err.Error()
	}
	return what
}

// Parse parses and validates a configuration: the YAML in data, its ${...}
// placeholders expanded from environ, then the BROKER_ variables of environ
// applied over it. environ is in the form of os.Environ. Every problem a user can
// cause is returned as a *Error. Relative paths of the plugins section are kept as
// written (Load resolves them against the file's directory).
func Parse(data []byte, environ []string) (*Config, error) {
	c, err := parse(data, environ, "")
	if err != nil {
		return nil, err
	}
	return c, nil
}

// keyDelim separates viper's key paths. It is not ".", so that a key written with
// a dot in it (an adapter option "a.b") stays one key.
const keyDelim = "\x00"

// setDefaults gives viper the default of every key that has one. A list default
// (transportConnectors) is taken whole; persistenceAdapter has none because a
// default adapter key would be merged with the file's and make two adapters:
// settings supplies memory when the section is absent. Defaults inside list
// elements (destinationPolicy) cannot be given to viper: build fills them in.
// streams.directory has none: build derives it from broker.dataDirectory.
func setDefaults(v *viper.Viper) {
	key := func(path ...string) string { return strings.ToLower(strings.Join(path, keyDelim)) }
	v.SetDefault(key("broker", "brokerName"), DefaultBrokerName)
	v.SetDefault(key("broker", "dataDirectory"), DefaultDataDirectory)
	v.SetDefault(key("broker", "persistent"), DefaultPersistent)
	v.SetDefault(key("broker", "schedulerSupport"), DefaultSchedulerSupport)
	v.SetDefault(key("broker", "offlineDurableSubscriberTaskSchedule"), DefaultOfflineDurableSubscriberTaskSchedule)
	v.SetDefault(key("broker", "allowLinkStealing"), DefaultAllowLinkStealing)
	v.SetDefault(key("broker", "maxPendingLogins"), DefaultMaxPendingLogins)
	v.SetDefault(key("broker", "adminAddress"), DefaultAdminAddress)
	v.SetDefault(key("broker", "advisorySupport"), DefaultAdvisorySupport)
	v.SetDefault(key("broker", "statsAddress"), "")
	v.SetDefault(key("broker", "adminTLS"), false)
	v.SetDefault(key("transportConnectors"), []any{
		map[string]any{"name": DefaultConnectorName, "uri": DefaultConnectorURI},
	})
	v.SetDefault(key("systemUsage", "memoryUsage"), int64(limits.DefaultMemoryUsage))
	v.SetDefault(key("systemUsage", "maxTransactionSize"), int64(limits.DefaultMaxTransactionSize))
	v.SetDefault(key("systemUsage", "storeUsage"), int64(DefaultStoreUsage))
	v.SetDefault(key("systemUsage", "sendFailIfNoSpace"), DefaultSendFailIfNoSpace)
	v.SetDefault(key("systemUsage", "sendFailIfNoSpaceAfterTimeout"), time.Duration(0))
	v.SetDefault(key("systemUsage", "maxTransactionsPerConnection"), int64(limits.DefaultMaxTransactionsPerConnection))
	v.SetDefault(key("systemUsage", "maxDestinations"), int64(limits.DefaultMaxDestinations))
	v.SetDefault(key("systemUsage", "maxSubscriptionsPerConnection"), int64(limits.DefaultMaxSubscriptionsPerConnection))
	v.SetDefault(key("systemUsage", "maxDurableSubscriptions"), int64(limits.DefaultMaxDurableSubscriptions))
	v.SetDefault(key("systemUsage", "maxTemporaryDestinationsPerConnection"), int64(limits.DefaultMaxTemporaryDestinationsPerConnection))
	v.SetDefault(key("systemUsage", "schedulerMemoryLimit"), int64(limits.DefaultSchedulerMemoryLimit))
	v.SetDefault(key("streams", "flush"), DefaultStreamsFlush)
	v.SetDefault(key("streams", "flushInterval"), DefaultFlushInterval)
	v.SetDefault(key("streams", "segmentBytes"), int64(DefaultSegmentBytes))
	v.SetDefault(key("streams", "segmentMs"), DefaultSegmentMs)
	v.SetDefault(key("streams", "indexIntervalBytes"), int64(DefaultIndexIntervalBytes))
	v.SetDefault(key("streams", "engine"), StreamsEmbedded)
	v.SetDefault(key("streams", "kafka", "seedBrokers"), []any{})
	v.SetDefault(key("streams", "kafka", "topicPrefix"), "")
	v.SetDefault(key("streams", "kafka", "partitions"), int64(0))
	v.SetDefault(key("streams", "kafka", "replicationFactor"), int64(-1))
	v.SetDefault(key("streams", "kafka", "clientId"), DefaultKafkaClientID)
	v.SetDefault(key("streams", "kafka", "sessionTimeout"), DefaultKafkaSessionTimeout)
	v.SetDefault(key("streams", "kafka", "tls", "enabled"), false)
	v.SetDefault(key("streams", "kafka", "tls", "caFile"), "")
	v.SetDefault(key("streams", "kafka", "tls", "certFile"), "")
	v.SetDefault(key("streams", "kafka", "tls", "keyFile"), "")
	v.SetDefault(key("streams", "kafka", "tls", "insecureSkipVerify"), false)
	v.SetDefault(key("streams", "kafka", "sasl", "mechanism"), "")
	v.SetDefault(key("streams", "kafka", "sasl", "user"), "")
	v.SetDefault(key("streams", "kafka", "sasl", "password"), "")
	v.SetDefault(key("virtualTopics", "enabled"), DefaultVirtualTopicsEnabled)
	v.SetDefault(key("virtualTopics", "name"), DefaultVirtualTopicName)
	v.SetDefault(key("virtualTopics", "prefix"), DefaultVirtualTopicPrefix)
	v.SetDefault(key("metrics", "perDestination"), DefaultMetricsPerDestination)
	v.SetDefault(key("metrics", "maxDestinationSeries"), int64(DefaultMetricsMaxDestinationSeries))
	v.SetDefault(key("sslContext", "certFile"), "")
	v.SetDefault(key("sslContext", "keyFile"), "")
	v.SetDefault(key("sslContext", "clientCAFile"), "")
	v.SetDefault(key("broker", "populateJMSXUserID"), false)
	v.SetDefault(key("broker", "useAuthenticatedPrincipalForJMSXUserID"), false)
	// Only keys that are there whether or not the file writes them: the presence of
	// jaasProperties, certificateUsers and authorization is what turns them on.
	v.SetDefault(key("plugins", "simpleAuthentication", "anonymousAccessAllowed"), false)
	v.SetDefault(key("plugins", "simpleAuthentication", "anonymousUser"), DefaultAnonymousUser)
	v.SetDefault(key("plugins", "simpleAuthentication", "anonymousGroup"), DefaultAnonymousGroup)
	v.SetDefault(key("plugins", "adminGroups"), []any{DefaultAdminGroup})
	v.SetDefault(key("plugins", "maxConnectionsPerUser"), int64(limits.DefaultMaxConnectionsPerUser))
	v.SetDefault(key("plugins", "maxDestinationsPerUser"), int64(limits.DefaultMaxDestinationsPerUser))
	v.SetDefault(key("plugins", "maxDurableSubscriptionsPerUser"), int64(limits.DefaultMaxDurableSubscriptionsPerUser))
	v.SetDefault(key("plugins", "maxUnackedBytesPerUser"), int64(limits.DefaultMaxUnackedBytesPerUser))
	v.SetDefault(key("plugins", "loginFailureDelay"), DefaultLoginFailureDelay)
	v.SetDefault(key("plugins", "maxLoginFailureDelay"), DefaultMaxLoginFailureDelay)
	v.SetDefault(key("plugins", "clientIdOwnership"), true)
}

// parse is Parse and Load; source is the file's path, "" for Parse.
func parse(data []byte, environ []string, source string) (*Config, *Error) {
	cfg, _, err := parseTree(data, environ, source)
	return cfg, err
}

// parseTree is parse that also returns the settings tree it built the configuration
// from.
func parseTree(data []byte, environ []string, source string) (*Config, map[string]any, *Error) {
	env := newEnviron(environ)
	src, err := readYAML(data, env)
	if err != nil {
		return nil, nil, err
	}
	v := viper.NewWithOptions(viper.KeyDelimiter(keyDelim))
	v.SetConfigType("yaml")
	setDefaults(v)
	if err := v.MergeConfigMap(src.doc); err != nil {
		return nil, nil, &Error{Problem: "internal: " + err.Error()}
	}
	tree := settings(v, src.top)
	from, ignored, err := overlayEnv(tree, env, src.used)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := tree["persistenceadapter"]; !ok {
		tree["persistenceadapter"] = map[string]any{DefaultAdapter: map[string]any{}}
	}
	c := &checker{spell: src.spell, from: from, tree: tree}
	if source != "" {
		c.dir = filepath.Dir(source)
	}
	if err := c.check(tree, schema, ""); err != nil {
		return nil, nil, err
	}
	f := file{DestinationPolicy: defaultPolicies(tree)}
	if err := c.decode(tree, &f); err != nil {
		return nil, nil, err
	}
	cfg, err := c.build(&f)
	if err != nil {
		return nil, nil, err
	}
	cfg.IgnoredEnv = ignored
	cfg.Source = source
	return cfg, tree, nil
}

// settings is viper's settings tree (lower-cased keys, defaults filled in) with
// what viper's AllSettings leaves out put back: AllSettings lists only keys that
// hold a value, so an empty mapping or a null ("memory: {}", "memory:", an
// unknown "foo:") would vanish. Each top-level section the file wrote is merged
// again from viper's view of the file, which keeps them. A null section is an
// empty one: an empty list stays empty instead of taking the default list, an
// empty mapping keeps the defaults of its keys.
func settings(v *viper.Viper, top map[string]bool) map[string]any {
	tree := v.AllSettings()
	for k, isNull := range top {
		if isNull {
			switch tree[k].(type) {
			case []any:
				tree[k] = []any{}
			case nil:
				tree[k] = nil
			}
			continue
		}
		tree[k] = mergeFile(tree[k], v.Get(k))
	}
	return tree
}

// mergeFile merges a value from the file (src) over the default-filled settings
// (dst): mappings key by key, a null keeps the default (or an empty list), and
// anything else replaces.
func mergeFile(dst, src any) any {
	switch s := src.(type) {
	case nil:
		if _, isList := dst.([]any); isList {
			return []any{}
		}
		return dst
	case map[string]any:
		d, ok := dst.(map[string]any)
		if !ok {
			d = map[string]any{}
		}
		for k, sv := range s {
			dv, present := d[k]
			if sv == nil && !present {
				d[k] = nil // keep the key: "memory:" is an adapter with no options
				continue
			}
			d[k] = mergeFile(dv, sv)
		}
		return d
	}
	return src
}

// build validates the decoded sections and assembles the Config.
func (c *checker) build(f *file) (*Config, *Error) {
	if strings.TrimSpace(f.Broker.BrokerName) == "" {
		return nil, c.errorf("broker.brokerName", nil, "must not be empty", "any name, e.g. "+DefaultBrokerName)
	}
	if strings.TrimSpace(f.Broker.DataDirectory) == "" {
		return nil, c.errorf("broker.dataDirectory", nil, "must not be empty", "a directory path, e.g. "+DefaultDataDirectory)
	}
	if err := c.positive("broker.offlineDurableSubscriberTaskSchedule", f.Broker.OfflineDurableSubscriberTaskSchedule); err != nil {
		return nil, err
	}
	if err := c.intRange("broker.maxPendingLogins", int64(f.Broker.MaxPendingLogins), 1, math.MaxInt32, ""); err != nil {
		return nil, err
	}
	conns, err := c.buildConnectors(f.TransportConnectors)
	if err != nil {
		return nil, err
	}
	usage, err := c.buildSystemUsage(f.SystemUsage)
	if err != nil {
		return nil, err
	}
	policies, err := c.buildPolicies(f.DestinationPolicy)
	if err != nil {
		return nil, err
	}
	streams, err := c.buildStreams(f.Streams, f.Broker.DataDirectory)
	if err != nil {
		return nil, err
	}
	vt, err := c.buildVirtualTopics(f.VirtualTopics)
	if err != nil {
		return nil, err
	}
	ssl, err := c.buildSSLContext(f.SSLContext, conns)
	if err != nil {
		return nil, err
	}
	plugins, err := c.buildPlugins(f.Plugins)
	if err != nil {
		return nil, err
	}
	metrics, err := c.buildMetrics(f.Metrics)
	if err != nil {
		return nil, err
	}
	if err := c.buildAdmin(&f.Broker, &plugins, ssl); err != nil {
		return nil, err
	}
	return &Config{
		Broker:              f.Broker,
		Persistence:         buildPersistence(f.PersistenceAdapter, f.Broker.Persistent),
		TransportConnectors: conns,
		SystemUsage:         usage,
		DestinationPolicy:   policies,
		Streams:             streams,
		VirtualTopics:       vt,
		SSLContext:          ssl,
		Plugins:             plugins,
		Metrics:             metrics,
	}, nil
}
