package tests

import (
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenWireDurableSharedWithStomp: one durable subscription, two protocols, as
// ActiveMQ keys it (client id and subscription name): a JMS client makes it; a STOMP
// client with the same client-id and activemq.subscriptionName resumes it and gets what
// was published meanwhile; then the JMS client resumes it again and gets what followed.
func TestOpenWireDurableSharedWithStomp(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		topic, client := owName(t, "t"), owName(t, "client")
		durable := func(scenario string, opts ...string) owResult {
			return runJavaOW(t, owClasspath(t), "OwInterop", b.URL, scenario,
				append([]string{"dest=" + topic, "client=" + client, "name=shared"}, opts...)...)
		}
		publish := func(bodies ...string) {
			p := dial(t, b.Stomp)
			for _, body := range bodies {
				require.NoError(t, p.Send("/topic/"+topic, "text/plain", []byte(body),
					stomp.SendOpt.NoContentLength, stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Receipt))
			}
			require.NoError(t, p.Disconnect())
		}

		assert.Equal(t, "true", durable("durable-open").get("opened"))
		publish("m1", "m2")
		c := dial(t, b.Stomp, stomp.ConnOpt.Header("client-id", client))
		sub, err := c.Subscribe("/topic/"+topic, stomp.AckClientIndividual,
			stomp.SubscribeOpt.Header("activemq.subscriptionName", "shared"))
		require.NoError(t, err)
		for _, want := range []string{"m1", "m2"} {
			select {
			case m := <-sub.C:
				require.NoError(t, m.Err)
				assert.Equal(t, want, string(m.Body))
				require.NoError(t, c.Ack(m))
			case <-time.After(20 * time.Second):
				t.Fatalf("the STOMP client resuming the JMS durable subscription got nothing for %s", want)
			}
		}
		require.NoError(t, c.Disconnect())

		publish("m3")
		r := durable("durable-take", "n=1", "unsubscribe=true")
		assert.Equal(t, []string{"m3"}, r.all("got"), "the JMS client resumes it after the STOMP client")
	})
}
