package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/activemq-go/broker/destinations/policy"
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
	f.Add([]byte("plugins: {simpleAuthentication: {users: [{username: a, password: p, groups: 'x,y'}]}, authorization: {entries: [{queue: A, read: x}]}}\n"),
		"BROKER_PLUGINS_ADMINGROUPS=a,b")
	f.Add([]byte("plugins: {jaasProperties: {users: u}, authorization: {tempDestination: {read: [a]}}}\n"), "BROKER_PLUGINS_SIMPLEAUTHENTICATION_USERS_0_USERNAME=u")
	f.Add([]byte("transportConnectors: [{name: w, uri: 'ws://h:1?allowedOrigins=*.e.com'}]\n"), "")
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
		if p := c.Plugins; len(p.AdminGroups) == 0 || p.LoginFailureDelay <= 0 || p.MaxLoginFailureDelay < p.LoginFailureDelay ||
			p.AnonymousUser == "" || p.AnonymousGroup == "" {
			t.Fatalf("plugins out of range: %+v", p)
		}
		for _, u := range c.Plugins.Users {
			if u.Username == "" || (u.Password == "") == (u.PasswordHash == "") {
				t.Fatalf("user without exactly one password: %q", u.Username)
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
				(p.IsStream() && (p.Partitions < 1 || p.Partitions > policy.MaxPartitions || p.Topic == "")) {
				t.Fatalf("policy entry out of range: %+v", p)
			}
		}
	})
}
