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
//	persistenceAdapter:          # exactly one adapter key; without the section: memory
//	  memory: {}                 # memory | kahaDB | bbolt | jdbc | kafkaLog
//	transportConnectors:         # at least one; without the section: one connector
//	  - name: stomp              #   named stomp on stomp://127.0.0.1:61613
//	    uri: stomp://127.0.0.1:61613?maxFrameSize=10485760&maxConnections=1000
//
// Any other key, at any level outside an adapter's block, is an error that names
// the key and lists the keys allowed there. Keys are case-insensitive (viper
// lower-cases them), so two keys differing only in case are a duplicate.
//
// An adapter's block is not interpreted here: it is handed to the adapter as
// Persistence.Options, with keys lower-cased. The block may be a mapping or empty
// ("memory: {}" or "memory:"); anything else is an error.
//
// A connector uri is scheme://host:port?options. The scheme is stomp (stomp+nio,
// ActiveMQ's NIO variant, is read as stomp). The port is required (0 picks a free
// one); the host may be empty for all interfaces. "&amp;", as copied from
// activemq.xml, is read as "&". The options, by ActiveMQ name and short name
// (matched case-insensitively), are:
//
//	maximumConnections | maxConnections                 default 1000, >= 1
//	wireFormat.maxFrameSize | maxFrameSize              default 10485760, >= 1024, a size
//	wireFormat.maxDataLength                            default 104857600, >= 1, a size
//	wireFormat.maxHeaders | maxHeaders                  default 1000, >= 1
//	wireFormat.maxHeaderLength | maxHeaderLength        default 10240, >= 1, a size
//	transport.connectAttemptTimeout | connectTimeout    default 30s, >= 0 (0: no limit), a duration
//	transport.hbGracePeriodMultiplier | hbGracePeriodMultiplier   default 1.5, >= 1.0
//	transport.defaultHeartBeat                          "x,y" durations, default 0,0
//
// ActiveMQ silently ignores an option it does not know, so a misspelt or wrongly
// prefixed option does nothing there; here it is an error listing the options.
// Sizes are as ParseSize reads them ("64mb", "1 GiB", plain bytes), durations as
// ParseDuration reads them (an integer is milliseconds, else "30s").
//
// An empty section (written with no value, or {} / []) is empty, not absent: an
// empty persistenceAdapter or transportConnectors is an error, an empty broker
// keeps every default. A single value written with no value keeps its default.
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
//	BROKER_TRANSPORTCONNECTORS_0_URI=...     transportConnectors[0].uri
//	BROKER_PERSISTENCEADAPTER_KAHADB_JOURNALMAXFILELENGTH=64mb
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
// keys naming a password, passcode or secret, and passwords inside URLs, are
// never shown.
package config
