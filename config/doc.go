// Package config reads activemq-style.yaml, the broker's configuration file,
// whose keys follow the activemq.xml names an ActiveMQ user already knows.
//
// # Schema
//
//	broker:
//	  brokerName: localhost      # default localhost; must not be empty
//	  dataDirectory: ./data      # default ./data; a relative path stays relative
//	                             # (the caller resolves it against its working directory)
//	  persistent: true           # default true; false forces the memory adapter,
//	                             # as <broker persistent="false"> does
//	  schedulerSupport: true     # AMQ_SCHEDULED_* headers honoured (ActiveMQ's default
//	                             # is false; see DefaultSchedulerSupport)
//	  offlineDurableSubscriberTaskSchedule: 5m   # how often offline durable
//	                             # subscriptions are checked for their timeout; > 0
//	  adminAddress: 127.0.0.1:8161   # the admin listener: web console, REST API (/api/),
//	                             # /metrics, /stats; "" for none; statsAddress is its
//	                             # older name (set alone, it sets adminAddress)
//	  adminGroups: [admins]      # users of these groups may use the admin listener when
//	                             # authentication is configured; wins over the older
//	                             # plugins.adminGroups; at least one
//	  monitorGroups: []          # users of these groups may read on the admin listener
//	                             # (GETs, Jolokia reads, /metrics, the console's pages)
//	                             # and change nothing (403); default none
//	  adminAllowedHosts: []      # host names requests may name in Host besides any IP
//	                             # address, localhost (and the host name when listening
//	                             # on 0.0.0.0); others get 421 (DNS rebinding); "*": any
//	  adminTLS: false            # true: HTTPS with the sslContext certificate
//	  adminClientAuth: none      # none | want | need: client certificates of
//	                             # sslContext.clientCAFile, as needClientAuth
//	  allowLinkStealing: false   # true: a CONNECT with the client-id of a live
//	                             # connection replaces it instead of failing
//	  advisorySupport: true      # ActiveMQ's advisory messages on ActiveMQ.Advisory.*
//	                             # topics; false: nothing is published on them
//	  populateJMSXUserID: false  # true: every sent message's JMSXUserID header is the
//	                             # sender's user, whatever the client set (as ActiveMQ)
//	  useAuthenticatedPrincipalForJMSXUserID: false   # true: the user the login produced
//	                             # (a certificate's mapped user) rather than the login header
//	  maxPendingLogins: 500      # connections, all connectors together, accepted and not
//	                             # logged in yet; one more gets an ERROR and is closed; >= 1
//	persistenceAdapter:          # exactly one adapter key; without the section: memory
//	  memory: {}                 # memory | kahaDB | bbolt | jdbc | kafkaLog
//	transportConnectors:         # at least one; without the section: one connector
//	  - name: stomp              #   named stomp on stomp://127.0.0.1:61613
//	    uri: stomp://127.0.0.1:61613?maxFrameSize=10485760&maxConnections=1000
//	systemUsage:                 # ActiveMQ's <systemUsage>
//	  maxTransactionSize: 64mb   # bytes one open transaction may hold until COMMIT
//	  maxTransactionsPerConnection: 64   # transactions one connection may have open
//	                             # at once; a BEGIN past it gets an ERROR; >= 1
//	  maxDestinations: 10000     # queues and topics (temporary ones too) clients may
//	                             # create; a SEND or SUBSCRIBE past it gets an ERROR
//	                             # (dead-letter queues are still made); >= 1
//	  maxSubscriptionsPerConnection: 10000   # subscriptions (browsers too) one
//	                             # connection may have; a SUBSCRIBE past it gets an ERROR
//	  maxDurableSubscriptions: 10000   # durable topic subscriptions clients may create,
//	                             # broker-wide; a SUBSCRIBE creating one past it gets an
//	                             # ERROR (recovered ones count, are never refused); >= 1
//	  maxTemporaryDestinationsPerConnection: 1000   # temporary queues and topics one
//	                             # connection may have; one more gets an ERROR; >= 1
//	  schedulerMemoryLimit: 32mb # persistent scheduled messages held in memory, the
//	                             # soonest; the others wait in the store; >= 64kb
//	  memoryUsage: 1gb           # bytes of messages held in memory, broker-wide; >= 1mb
//	  storeUsage: 100gb          # room the persistent store may use; >= 1mb. kahaDB and
//	                             # kafkaLog count their files, bbolt the pages of its
//	                             # file in use, jdbc its rows (bodies + ~256 bytes each),
//	                             # memory the messages it holds
//	  sendFailIfNoSpace: false   # over a limit, the producer's SEND waits for room
//	                             # (as ActiveMQ); true: it gets an ERROR at once
//	  sendFailIfNoSpaceAfterTimeout: 0   # > 0: wait this long for space, then ERROR
//	destinationPolicy: []        # per-destination settings: see Destination policy
//	streams:                     # the partitioned log behind type: stream topics
//	  directory: ""              # "" is <dataDirectory>/streams, resolved here
//	  flush: batch               # batch | interval | os: fsync per batch of appends,
//	                             # every flushInterval, or never (left to the OS)
//	  flushInterval: 1s          # > 0
//	  segmentBytes: 1gb          # roll a segment at this size; > 0
//	  segmentMs: 168h            # roll a segment at this age; > 0
//	  indexIntervalBytes: 4kb    # log bytes between index entries; > 0
//	  engine: embedded           # embedded (the log above, in directory) | kafka: the
//	                             # streams are Kafka topics (docs/streams.md); the keys
//	                             # above then do not apply
//	  kafka:                     # engine: kafka only
//	    seedBrokers: []          # host:port of some Kafka brokers; required with kafka
//	    topicPrefix: ""          # Kafka topic = topicPrefix + the stream's log topic name
//	    partitions: 0            # 0: each stream's destinationPolicy partitions; else
//	                             # the count of every topic created; 0 to 1024
//	    replicationFactor: -1    # of created topics; -1: the cluster's default
//	    clientId: activemq-go    # the Kafka client.id of the broker's connections
//	    sessionTimeout: 10s      # consumer group session: a dead node's partitions
//	                             # move to the others after this; > 0
//	    tls:
//	      enabled: false
//	      caFile: ""             # PEM CAs verifying the brokers; "": the system's
//	      certFile: ""           # PEM client certificate and key, both or neither
//	      keyFile: ""
//	      insecureSkipVerify: false
//	    sasl:
//	      mechanism: ""          # "" | PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
//	      user: ""               # required with a mechanism
//	      password: ""           # ${KAFKA_PASSWORD}; never logged
//	sslContext:                  # ActiveMQ's <sslContext>, PEM files instead of key stores
//	  certFile: ""               # certificate chain, server's first; required when a
//	                             # connector uses TLS (stomp+ssl, stomp+nio+ssl, wss)
//	  keyFile: ""                # certFile's private key, PEM, unencrypted; required with it
//	  clientCAFile: ""           # PEM CA bundle verifying client certificates (trustStore);
//	                             # required by needClientAuth and wantClientAuth
//	  enabledCipherSuites:       # TLS 1.2 suites of every TLS listener, IANA names (a list
//	                             # or comma-separated); absent: DefaultCipherSuites, ECDHE
//	                             # with AES-GCM or ChaCha20-Poly1305; TLS 1.3 names only:
//	                             # TLS 1.2 off; an unknown name is an error
//	virtualTopics:               # ActiveMQ's virtualTopic interceptor
//	  enabled: true
//	  name: VirtualTopic.>       # the topics that fan out
//	  prefix: Consumer.*.        # consumer queue: the prefix with "*" replaced by the
//	                             # group, then the topic's name; exactly one "*" element
//	plugins:                     # authentication and authorization: see Plugins
//	metrics:                     # GET /metrics on the admin listener (Prometheus)
//	  perDestination: true       # series per destination (broker_messages{destination},
//	                             # broker_queue_*, durable backlogs, stream group lags);
//	                             # false: broker-wide series only
//	  maxDestinationSeries: 1000 # the cardinality guard: past this many destinations
//	                             # (durable subscriptions, stream groups) the smallest
//	                             # are summed into destination="_other" and counted in
//	                             # broker_metrics_series_dropped_total; >= 1
//
// With the defaults, a message sent to topic VirtualTopic.Orders is consumed from
// queue Consumer.<group>.VirtualTopic.Orders, one queue per consumer group.
//
// Any other key, at any level outside an adapter's block, is an error that names
// the key and lists the keys allowed there. Keys are case-insensitive (viper
// lower-cases them), so two keys differing only in case are a duplicate.
//
// An adapter's block is not interpreted here: it is handed to the adapter as
// Persistence.Options, with keys lower-cased. The block may be a mapping or empty
// ("memory: {}" or "memory:"); anything else is an error.
//
// A connector uri is scheme://host:port?options. The scheme is stomp (TCP),
// stomp+ssl (TLS 1.2 or later), ws (WebSocket) or wss (WebSocket over TLS);
// stomp+nio and stomp+nio+ssl, ActiveMQ's NIO variants, are read as stomp and
// stomp+ssl. The sslContext section's files, loaded and checked here, give the TLS
// connectors their certificate: a missing or unreadable file, a key that does not
// match the certificate, or a client-auth option without clientCAFile is an error.
// The port is required (0 picks a free
// one); the host may be empty for all interfaces. "&amp;", as copied from
// activemq.xml, is read as "&". The options, by ActiveMQ name and short name
// (matched case-insensitively), are:
//
//	maximumConnections | maxConnections                 default 1000, >= 1
//	wireFormat.maxFrameSize | maxFrameSize              default 10485760, >= 1024, a size
//	maxFrameSizeBeforeLogin                             default 16384, >= 1024, a size; the
//	                                                    largest frame until the client has
//	                                                    logged in (at most maxFrameSize)
//	wireFormat.maxDataLength                            default 104857600, >= 1, a size
//	wireFormat.maxHeaders | maxHeaders                  default 1000, >= 1
//	wireFormat.maxHeaderLength | maxHeaderLength        default 10240, >= 1, a size
//	transport.connectAttemptTimeout | connectTimeout    default 30s, >= 0 (0: no limit), a duration
//	transport.hbGracePeriodMultiplier | hbGracePeriodMultiplier   default 1.5, >= 1.0
//	transport.defaultHeartBeat                          "x,y" durations, default 0,0
//	transport.needClientAuth | needClientAuth           default false; TLS only: require a client
//	                                                    certificate signed by clientCAFile's CAs
//	transport.wantClientAuth | wantClientAuth           default false; TLS only: verify one if given
//	transport.enabledCipherSuites | enabledCipherSuites default sslContext's; TLS only: the TLS 1.2
//	                                                    cipher suites, comma-separated names
//	allowedOrigins                                      default none; ws and wss only: see below
//	allowedHosts                                        default none; ws and wss only: see below
//
// ActiveMQ silently ignores an option it does not know, so a misspelt or wrongly
// prefixed option does nothing there; here it is an error listing the options.
//
// allowedOrigins lists, comma-separated, the Origin hosts whose pages may open a
// WebSocket connection besides the connector's own host, as coder/websocket's
// OriginPatterns: host or host:port, matched case-insensitively with path.Match
// ("*.example.com", "localhost:*"), "*" for any site, or scheme://host to match the
// scheme too (https://app.example.com). Without it only pages served from the
// connector's own host may connect; a client that sends no Origin (not a browser)
// always may. It is an error on a stomp, stomp+nio, stomp+ssl or stomp+nio+ssl
// connector, as is an empty list or a pattern with a path.
//
// allowedHosts lists, comma-separated, the host names a browser's WebSocket
// handshake (one with an Origin) may name in its Host header besides any IP
// address, localhost and, on a connector listening on every interface, the
// machine's host name (package allowedhosts): names or path.Match patterns
// ("*.example.com"), no port, "*" for any. Others get 421: a page of a name that
// resolves to the broker (DNS rebinding) sends an Origin equal to its Host, which
// the Origin check lets through. broker.adminAllowedHosts is the same for the
// admin listener, for every request (a page's GETs carry no Origin).
//
// Everywhere, sizes are as setting.ParseSize reads them ("64mb", "1 GiB", plain bytes;
// never negative), durations as setting.ParseDuration reads them (an integer is
// milliseconds, else "30s"), and the values of nackPolicy, type and flush are
// matched case-insensitively.
//
// An empty section (written with no value, or {} / []) is empty, not absent: an
// empty persistenceAdapter or transportConnectors is an error, an empty
// destinationPolicy has no entries, and the other sections keep every default. A
// single value written with no value keeps its default.
//
// # Destination policy
//
// destinationPolicy is a list of entries, ActiveMQ's <policyEntry>, each decoded into
// a destinations/policy.Policy. That package's documentation lists every key, its
// default and what it may be; its Complete checks each entry and Select picks the
// entry that applies to a destination.
//
// # Plugins
//
// The plugins section is ActiveMQ's <plugins>: simpleAuthenticationPlugin,
// jaasAuthenticationPlugin (PropertiesLoginModule, TextFileCertificateLoginModule)
// and authorizationPlugin. Without simpleAuthentication users, jaasProperties or
// certificateUsers there is no authentication: every client is let in as the
// anonymous user. Without authorization every client may do anything.
//
//	plugins:
//	  simpleAuthentication:
//	    anonymousAccessAllowed: false  # a client without login gets in as anonymousUser,
//	    anonymousUser: anonymous       # member of anonymousGroup
//	    anonymousGroup: anonymous
//	    users:                         # username and exactly one of password, passwordHash
//	      - {username: system, password: "${SYSTEM_PASSWORD}", groups: [users, admins]}
//	      - {username: app, passwordHash: "$2a$10$...", groups: "users,ops", maxConnections: 10}
//	  jaasProperties:                  # ActiveMQ's users.properties and groups.properties
//	    users: users.properties        # user=password lines (or hashes); required
//	    groups: groups.properties      # group=user1,user2 lines; optional
//	    reload: false                  # re-read the files when they change
//	  certificateUsers:                # TLS client certificates: user=subject DN lines
//	    file: users-by-dn.properties   # required
//	    groups: groups.properties      # optional
//	    reload: false
//	  authorization:                   # ActiveMQ's authorizationMap
//	    entries:                       # exactly one of queue: or topic:, a pattern
//	      - {queue: ">", read: admins, write: admins, admin: admins}
//	      - {topic: "ActiveMQ.Advisory.>", read: "*", write: "*", admin: "*"}
//	    tempDestination: {read: users, write: users, admin: users}
//	  adminGroups: [admins]            # older place of broker.adminGroups, which wins
//	  maxConnectionsPerUser: 100       # live connections of each user; 0: no limit
//	  maxDestinationsPerUser: 10000    # queues and topics each user's SENDs and SUBSCRIBEs
//	                                   # created (while they exist); 0: no limit
//	  maxDurableSubscriptionsPerUser: 1000   # durable subscriptions each user created
//	                                   # (while they exist); 0: no limit
//	  maxUnackedBytesPerUser: 256mb    # queue messages dispatched to each user's consumers
//	                                   # and not acknowledged; past it they get no more
//	                                   # until it acknowledges some; 0: no limit
//	  loginFailureDelay: 100ms         # the ERROR of a first failed login waits this long,
//	  maxLoginFailureDelay: 5s         # doubling per further failure up to this; > 0
//	  clientIdOwnership: true          # a client-id with durable subscriptions is its user's
//
// A list of groups (groups, read, write, admin, adminGroups) is a YAML list or a
// comma-separated string, and either way commas separate names: spaces around names,
// empty names and repeats are dropped; "*" is every group. read, write and admin
// left out or empty give the right to no group. A passwordHash is what `broker
// passwd` prints: bcrypt ($2a$, $2b$, $2y$) or argon2id ($argon2id$); a password
// is plain text, best from a placeholder. A password is taken as written, never as
// a number or a boolean (YAML would read password: 0123 as 83). A user's
// maxConnections (0: maxConnectionsPerUser) overrides maxConnectionsPerUser.
// Relative paths of jaasProperties and certificateUsers are resolved against the
// directory of the configuration file (Parse, which has no file, keeps them as
// written). Authorization patterns are those of destinationPolicy; an
// authorization section, even empty ("authorization:" or "entries: []"), turns
// authorization on, and then what no entry allows is denied. Temporary
// destinations have no entries: tempDestination gives their rights (tempQueue and
// tempTopic, which destinationPolicy has, are errors here).
//
// Errors, besides values out of the ranges above: a user without a username, with
// a username used before, with neither or both of password and passwordHash, with
// an empty password or a hash of another format; a simpleAuthentication section
// (even "users: []") with no user and no other user source, since no client could
// log in; jaasProperties without users, certificateUsers without file; an
// authorization entry with neither or both of queue and topic, or a bad pattern;
// an empty adminGroups; maxLoginFailureDelay below loginFailureDelay.
//
// # Placeholders
//
// Before anything else, ${NAME} in any key or value of the file is replaced by
// the environment variable NAME, like a property placeholder in activemq.xml.
// ${NAME:-default} gives a default, used when NAME is unset or empty. A
// placeholder whose variable is unset and has no default is an error naming it;
// a variable set to "" expands to "". "$${" writes a literal "${"; any other "$"
// is left alone. Names are letters, digits, "_" and "." (${activemq.data}).
// Expansion works on the parsed YAML, scalar by scalar, and is not repeated on
// the result: a value containing "#" or ": " stays one value (a password needs no
// quoting), an expansion cannot add keys or lists, and an unquoted value is typed
// by what it expands to (persistent: ${P} with P=false is a boolean; quoted, it
// stays a string). Placeholders in comments are not expanded. Because the file is
// parsed first, a placeholder inside a flow collection ({ } or [ ]) must be
// quoted: {brokerName: "${NAME}"}.
//
// # Environment
//
// After the file, every environment variable named BROKER_<PATH> overrides one
// key. PATH is the key path with "_" between the keys and list indexes, matched
// case-insensitively:
//
//	BROKER_BROKER_BROKERNAME=b1              broker.brokerName
//	BROKER_BROKER_PERSISTENT=false           broker.persistent
//	BROKER_BROKER_ADMINADDRESS=              broker.adminAddress (empty: no admin listener)
//	BROKER_BROKER_ADMINGROUPS=ops,admins     broker.adminGroups, a list of names set whole
//	BROKER_BROKER_MONITORGROUPS=monitors     broker.monitorGroups, likewise
//	BROKER_TRANSPORTCONNECTORS_0_URI=...     transportConnectors[0].uri
//	BROKER_PERSISTENCEADAPTER_KAHADB_JOURNALMAXFILELENGTH=64mb
//	BROKER_SYSTEMUSAGE_MEMORYUSAGE=2gb       systemUsage.memoryUsage
//	BROKER_DESTINATIONPOLICY_0_MEMORYLIMIT=128mb
//	BROKER_DESTINATIONPOLICY_0_REDELIVERYPOLICY_MAXIMUMREDELIVERIES=3
//	BROKER_PLUGINS_MAXCONNECTIONSPERUSER=10  plugins.maxConnectionsPerUser
//	BROKER_PLUGINS_ADMINGROUPS=ops,admins    plugins.adminGroups, a list of names set whole
//	BROKER_PLUGINS_SIMPLEAUTHENTICATION_USERS_0_PASSWORD=...
//
// Keys may be set whether or not the file has them, and inside an adapter's block
// any key may be created (its value is then a string). A list index may name an
// existing element or be exactly the list's length, which appends an element
// (BROKER_TRANSPORTCONNECTORS_1_NAME and _1_URI add a second connector to a
// one-connector list); a larger index is an error. A file without
// transportConnectors has the default one-connector list, so
// BROKER_TRANSPORTCONNECTORS_0_URI moves the default connector. Variables are
// applied in key order, lower indexes first; the same key set twice (names
// differing only in case) is an error. A variable naming a key that cannot exist (an
// unknown key, an unknown adapter, a section rather than a value, an index
// past the end) is an error naming the variable. So is a BROKER_ variable
// that is not meant for the broker at all, with one exception: variables
// that the file names in placeholders are not read as overrides. Keys
// containing "_" cannot be reached. An override creating a second adapter
// key makes the file invalid (exactly one adapter).
//
// # Errors
//
// Every problem a user can cause is a *Error naming the key (as written in the
// file, or the environment variable), the value and what is allowed; a bad value
// that came from the environment also names its variable. Values of
// keys naming a password, passcode or secret (passwordHash too), passwords inside
// URLs, and any value in simpleAuthentication's users but usernames, groups and
// maxConnections, are never shown. Printed (fmt), logged (slog) or marshalled to
// JSON, a PluginUser shows "xxxxx" for its password and hash.
package config
