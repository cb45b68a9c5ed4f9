package main

// The persistence adapters compiled into the broker. This is the only place that names
// them; everything else opens them by the name in the configuration.
import (
	_ "github.com/activemq-go/broker/persistence/boltstore"
	_ "github.com/activemq-go/broker/persistence/journal"
	_ "github.com/activemq-go/broker/persistence/logstore"
	_ "github.com/activemq-go/broker/persistence/memstore"
	_ "github.com/activemq-go/broker/persistence/pgstore"
)
