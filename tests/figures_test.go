package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Figures an operator alerts on (issue 25), end to end through the real binary.

// nullsIn returns the JSON paths of v (decoded JSON) whose value is null.
func nullsIn(path string, v any) []string {
	switch x := v.(type) {
	case nil:
		return []string{path}
	case map[string]any:
		var out []string
		for k, e := range x {
			out = append(out, nullsIn(path+"."+k, e)...)
		}
		return out
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, nullsIn(path+"[]", e)...)
		}
		return out
	}
	return nil
}

// TestStatsEmptyListsAreArrays: GET /stats of a broker with nothing in a list (no
// durable subscription; a stream with no consumer group) answers [] for it, never null,
// and no field anywhere is null.
func TestStatsEmptyListsAreArrays(t *testing.T) {
	b, base := adminBroker(t, brokerConfig{Adapter: "kahaDB: {}", Extra: "destinationPolicy:\n  - topic: \"s.>\"\n    type: stream\n"})
	c := jmsDial(t, b.Addr)
	c.send("/queue/figures", "x", "persistent", "true")
	c.send("/topic/s.events", "e", "persistent", "true")
	resp, err := http.Get(base + "/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(body, &v))
	assert.Empty(t, nullsIn("", v), "null in GET /stats: %s", body)
	assert.Equal(t, []any{}, v["durableSubscriptions"], "%s", body)
	assert.NotEmpty(t, v["destinations"], "%s", body)
}

// statsView is what the durable subscription tests read of GET /stats.
type statsView struct {
	Destinations []struct {
		Name   string
		Stored int64
	} `json:"destinations"`
	Durables []struct {
		ClientID       string
		Backlog        int64
		OfflineSeconds float64 `json:"offlineSeconds"`
	} `json:"durableSubscriptions"`
}

// subFigures is what the admin listener says of one durable subscription, per reader.
type subFigures struct {
	apiPending, statsBacklog, metricPending, consoleBacklog int64
	apiOffline, statsOffline, consoleOffline                float64
}

// topicFigures is what it says of a topic's held messages (stored for durable
// subscriptions), per reader (/metrics has no series of a topic's messages).
type topicFigures struct{ api, stats, console int64 }

// readFigures reads the REST API, /stats, /metrics and the console's pages of the admin
// listener at base for the durable subscriptions of /topic/topic (by client-id) and
// the topic.
func readFigures(t testing.TB, base, topic string) (map[string]subFigures, topicFigures) {
	t.Helper()
	a := newAPI(t, base)
	subs := map[string]subFigures{}
	var rows []struct {
		ClientID       string  `json:"client_id"`
		Pending        int64   `json:"pending"`
		OfflineSeconds float64 `json:"offline_seconds"`
	}
	a.get("/api/durable-subscriptions", &rows)
	for _, r := range rows {
		subs[r.ClientID] = subFigures{apiPending: r.Pending, apiOffline: r.OfflineSeconds}
	}
	var tf topicFigures
	d, ok := a.dest("/topic/" + topic)
	require.True(t, ok, "the topic is listed")
	tf.api = d.Messages

	var st statsView
	a.get("/stats", &st)
	for _, d := range st.Durables {
		f := subs[d.ClientID]
		f.statsBacklog, f.statsOffline = d.Backlog, d.OfflineSeconds
		subs[d.ClientID] = f
	}
	for _, d := range st.Destinations {
		if d.Name == "/topic/"+topic {
			tf.stats = d.Stored
		}
	}

	status, metrics, _ := a.call("GET", "/metrics", "")
	require.Equal(t, http.StatusOK, status)
	metric := func(series string) int64 {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\d+)$`).FindSubmatch(metrics)
		require.NotNil(t, m, "no series %s in /metrics", series)
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		return n
	}

	status, page, _ := a.call("GET", "/durable", "")
	require.Equal(t, http.StatusOK, status)
	for id := range subs {
		f := subs[id]
		f.metricPending = metric(fmt.Sprintf(`broker_subscription_pending_messages{destination="%s",subscription="%s:s"}`, topic, id))
		cells := consoleRow(t, page, `<td class="mono nowrap">`+id+`</td>`)
		require.Len(t, cells, 8, "the console's row of %s", id)
		f.consoleBacklog, _ = strconv.ParseInt(cells[5], 10, 64)
		f.consoleOffline = consoleSeconds(t, cells[6])
		subs[id] = f
	}
	status, page, _ = a.call("GET", "/topics", "")
	require.Equal(t, http.StatusOK, status)
	cells := consoleRow(t, page, `data-topic="`+topic+`"`)
	require.Len(t, cells, 7, "the console's row of the topic")
	tf.console, _ = strconv.ParseInt(cells[5], 10, 64)
	return subs, tf
}

var (
	consoleRowRE  = regexp.MustCompile(`(?s)<tr[^>]*>.*?</tr>`)
	consoleCellRE = regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)
	consoleTagRE  = regexp.MustCompile(`<[^>]*>`)
)

// consoleRow is the text of the cells of the console table row of page containing
// marker.
func consoleRow(t testing.TB, page []byte, marker string) []string {
	t.Helper()
	for _, row := range consoleRowRE.FindAll(page, -1) {
		if !bytes.Contains(row, []byte(marker)) {
			continue
		}
		var cells []string
		for _, c := range consoleCellRE.FindAllSubmatch(row, -1) {
			cells = append(cells, strings.TrimSpace(html.UnescapeString(consoleTagRE.ReplaceAllString(string(c[1]), ""))))
		}
		return cells
	}
	t.Fatalf("no row with %s in the page:\n%s", marker, page)
	return nil
}

// consoleSeconds reads the console's age ("42s", "3m 07s", "2h 05m"; "<1s" and "–" are
// 0) in seconds.
func consoleSeconds(t testing.TB, s string) float64 {
	t.Helper()
	if s == "<1s" || s == "–" {
		return 0
	}
	var total float64
	for _, f := range strings.Fields(s) {
		unit := map[byte]float64{'s': 1, 'm': 60, 'h': 3600, 'd': 86400}[f[len(f)-1]]
		n, err := strconv.Atoi(f[:len(f)-1])
		require.True(t, unit > 0 && err == nil, "an age the console wrote: %q", s)
		total += float64(n) * unit
	}
	return total
}

// TestDurableFiguresAfterRestart: two durable subscriptions of one topic, one that
// consumed 15 of the 20 messages published and one that consumed none, both offline;
// after the broker is stopped (SIGTERM) or killed (SIGKILL) and started again on the
// same store every reader (REST,
// /stats, the pending metric, the console) gives each its backlog (5 and 20) and an
// offline time counted from when it went offline, and the topic's held messages (REST,
// /stats, the console's Held) are the 20 stored copies; once the
// second consumed 17 the topic holds the 5 the first still owes.
func TestDurableFiguresAfterRestart(t *testing.T) {
	const n, topic = 20, "figures.restart"
	eachDurableAdapterAndRestart(t, func(t *testing.T, bc brokerConfig, down func(*brokerProc)) {
		bc.Env = append(bc.Env, adminEnv)
		b := startBroker(t, bc)
		base := "http://" + statsAddr(t, b)
		attach := func(id string) (*jmsClient, string) {
			c := jmsDial(t, b.Addr, "client-id", id)
			return c, c.subscribe("/topic/"+topic, "ack", "client-individual", "activemq.subscriptionName", "s")
		}
		for _, id := range []string{"fig-a", "fig-b"} {
			c, _ := attach(id)
			c.leave()
		}
		offlineB := time.Now()
		p := jmsDial(t, b.Addr)
		for i := range n {
			p.send("/topic/"+topic, strconv.Itoa(i), "persistent", "true")
		}
		c, sub := attach("fig-a")
		for range 15 {
			c.ack(c.next(sub))
		}
		c.leave()
		offlineA := time.Now()
		eventually(t, 20*time.Second, "two seconds offline", func() bool {
			subs, _ := readFigures(t, base, topic)
			return subs["fig-a"].apiOffline >= 2
		})

		down(b)
		b = startBroker(t, bc)
		base = "http://" + statsAddr(t, b)
		floorA, floorB := time.Since(offlineA).Seconds(), time.Since(offlineB).Seconds()
		subs, held := readFigures(t, base, topic)
		for id, want := range map[string]struct {
			backlog int64
			floor   float64
		}{"fig-a": {5, floorA}, "fig-b": {n, floorB}} {
			f := subs[id]
			assert.Equal(t, []int64{want.backlog, want.backlog, want.backlog, want.backlog},
				[]int64{f.apiPending, f.statsBacklog, f.metricPending, f.consoleBacklog}, "%s's backlog: REST, /stats, metric, console", id)
			for what, s := range map[string]float64{"REST": f.apiOffline, "/stats": f.statsOffline, "console": f.consoleOffline} {
				assert.GreaterOrEqual(t, s, math.Floor(want.floor), "%s offline seconds (%s) count from when it went offline", id, what)
			}
		}
		assert.Equal(t, topicFigures{n, n, n}, held, "the topic's held messages: REST, /stats, console")

		b2, sub2 := jmsDial(t, b.Addr, "client-id", "fig-b"), ""
		sub2 = b2.subscribe("/topic/"+topic, "ack", "client-individual", "activemq.subscriptionName", "s")
		for range 17 {
			b2.ack(b2.next(sub2))
		}
		eventually(t, 10*time.Second, "the topic holding what fig-a owes", func() bool {
			_, held = readFigures(t, base, topic)
			return held == topicFigures{5, 5, 5}
		})
	})
}
