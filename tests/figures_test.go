package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

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
