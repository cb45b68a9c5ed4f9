package kafkalog_test

import (
	"fmt"
	"log"
	"os"

	"github.com/activemq-go/broker/kafkalog"
)

func Example() {
	dir, err := os.MkdirTemp("", "kafkalog-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	l, err := kafkalog.Open(kafkalog.Options{Dir: dir, Flush: kafkalog.FlushBatch})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	if err := l.CreateTopic("orders", 2); err != nil {
		log.Fatal(err)
	}

	// Produce: one batch, durable (fsynced) when Append returns.
	base, err := l.Append("orders", 1, []kafkalog.Record{
		{Key: []byte("alice"), Value: []byte("book")},
		{Key: []byte("bob"), Value: []byte("pen"), Headers: [][2]string{{"priority", "high"}}},
	})
	if err != nil {
		log.Fatal(err)
	}

	// Consume as a member of a group, resuming from the committed offset.
	g := l.Group("billing")
	a, err := g.Join("consumer-1", "orders")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("generation", a.Generation, "partitions", a.Partitions)
	from, ok, err := g.Committed("orders", 1)
	if err != nil {
		log.Fatal(err)
	}
	if !ok {
		from = base
	}
	recs, err := l.Read("orders", 1, from, 1<<20)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range recs {
		fmt.Printf("%d %s %s %v\n", r.Offset, r.Key, r.Value, r.Headers)
	}
	if err := g.Commit("orders", 1, recs[len(recs)-1].Offset+1); err != nil {
		log.Fatal(err)
	}
	// Output:
	// generation 1 partitions [{orders 0} {orders 1}]
	// 0 alice book []
	// 1 bob pen [[priority high]]
}
