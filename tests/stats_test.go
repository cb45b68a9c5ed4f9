package tests

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var statsRE = regexp.MustCompile(`msg="admin listening" addr=(\S+)`)

// statsAddr waits for the broker's admin listener (broker.adminAddress, or its older
// name broker.statsAddress, e.g. from BROKER_BROKER_STATSADDRESS=127.0.0.1:0) and
// returns its address.
func statsAddr(t testing.TB, b *brokerProc) string {
	t.Helper()
	var addr string
	eventually(t, 10*time.Second, "the stats listener", func() bool {
		m := statsRE.FindStringSubmatch(b.Log())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	return addr
}

// getStats reads GET /stats of the stats listener at addr into v.
func getStats(t testing.TB, addr string, v any) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}

// TestStatsEndpoint: GET /stats lists destinations, each durable subscription with its
// backlog and age, and the journal's disk use and oldest segment.
func TestStatsEndpoint(t *testing.T) {
	b := startBroker(t, brokerConfig{Adapter: "kahaDB: {}", Env: []string{"BROKER_BROKER_STATSADDRESS=127.0.0.1:0"}})
	var addr string
	eventually(t, 10*time.Second, "the stats listener", func() bool {
		m := statsRE.FindStringSubmatch(b.Log())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	sub, err := stomp.Dial("tcp", b.Addr, stomp.ConnOpt.Header("client-id", "stats-app"), stomp.ConnOpt.Logger(quietLogger{}))
	require.NoError(t, err)
	_, err = sub.Subscribe("/topic/prices", stomp.AckClientIndividual, stomp.SubscribeOpt.Header("activemq.subscriptionName", "s1"))
	require.NoError(t, err)
	require.NoError(t, sub.Disconnect())
	p := dial(t, b.Addr)
	for i := 0; i < 3; i++ {
		require.NoError(t, p.Send("/topic/prices", "", []byte("x"), stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Receipt))
		require.NoError(t, p.Send("/queue/orders", "", []byte("y"), stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Receipt))
	}
	resp, err := http.Get("http://" + addr + "/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var st struct {
		Destinations []struct {
			Name    string
			Pending int
			Stored  int64
		} `json:"destinations"`
		Durables []struct {
			ClientID, Name string
			Active         bool
			Backlog        int
			OfflineSeconds float64 `json:"offlineSeconds"`
		} `json:"durableSubscriptions"`
		Store *struct {
			DiskUsage int64 `json:"diskUsage"`
		} `json:"store"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	var orders bool
	for _, d := range st.Destinations {
		if d.Name == "/queue/orders" {
			orders = true
			assert.Equal(t, 3, d.Pending)
			assert.EqualValues(t, 3, d.Stored)
		}
	}
	assert.True(t, orders, "queue listed: %+v", st.Destinations)
	require.Len(t, st.Durables, 1)
	assert.Equal(t, "stats-app", st.Durables[0].ClientID)
	assert.False(t, st.Durables[0].Active)
	assert.Equal(t, 3, st.Durables[0].Backlog)
	assert.Greater(t, st.Durables[0].OfflineSeconds, 0.0)
	require.NotNil(t, st.Store)
	assert.Greater(t, st.Store.DiskUsage, int64(0))
}
