package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "DB_PASSWORD=x")
	}
	f.Add([]byte("broker: {brokerName: ${X:-y}}\n"), "BROKER_TRANSPORTCONNECTORS_1_URI=stomp://h:1")
	f.Add([]byte("persistenceAdapter: {jdbc: {password: p}}\n"), "BROKER_PERSISTENCEADAPTER_JDBC_PASSWORD=q")
	f.Add([]byte("transportConnectors: [{name: a, uri: 'stomp://h:1?maxFrameSize=1kb'}]\n"), "")
	f.Add([]byte("destinationPolicy: [{topic: 'A.>', type: stream}]\n"), "BROKER_DESTINATIONPOLICY_0_PARTITIONS=3")
	f.Add([]byte("destinationPolicy: [{queue: A, deadLetterStrategy: {prefix: D.}}]\n"), "BROKER_DESTINATIONPOLICY_1_TEMPQUEUE=true")
	f.Fuzz(func(t *testing.T, data []byte, env string) {
		c, err := Parse(data, strings.Split(env, "\n"))
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error is %T, not *config.Error: %v", err, err)
			}
			if !strings.HasPrefix(err.Error(), "config: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		if c.Persistence.Adapter == "" || c.Persistence.Options == nil || len(c.TransportConnectors) == 0 {
			t.Fatalf("incomplete config: %+v", c)
		}
		for _, conn := range c.TransportConnectors {
			if conn.Scheme != "stomp" || conn.MaxFrameSize < 1024 || conn.HeartBeatGrace < 1 || conn.MaxConnections < 1 {
				t.Fatalf("connector out of range: %+v", conn)
			}
		}
		if c.SystemUsage.MemoryUsage < MinUsageLimit || c.Streams.Directory == "" || c.Streams.SegmentBytes < 1 {
			t.Fatalf("section out of range: %+v %+v", c.SystemUsage, c.Streams)
		}
		for _, p := range c.DestinationPolicy {
			kinds := 0
			for _, on := range []bool{p.Queue != "", p.Topic != "", p.TempQueue, p.TempTopic} {
				if on {
					kinds++
				}
			}
			if kinds != 1 || p.Prefetch < 1 || p.DurableTopicPrefetch < 1 || p.Redelivery.BackOffMultiplier < 1 ||
				p.Redelivery.MaximumRedeliveries < -1 || p.Redelivery.Delay(3) < 0 ||
				(p.IsStream() && (p.Partitions < 1 || p.Partitions > MaxPartitions || p.Topic == "")) {
				t.Fatalf("policy entry out of range: %+v", p)
			}
		}
	})
}
