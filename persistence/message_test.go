package persistence

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSubKeyString(t *testing.T) {
	for _, tc := range []struct {
		key  SubKey
		want string
	}{
		{SubKey{"app", "sub"}, "app:sub"}, // as before the escapes
		{SubKey{"a:b", "c"}, `a\cb:c`},
		{SubKey{"a", "b:c"}, "a:b:c"},
		{SubKey{`a\b`, "c"}, `a\\b:c`},
		{SubKey{`\:`, `\:`}, `\\\c:\:`},
		{SubKey{"", "id-1"}, ":id-1"},
		{SubKey{"", ""}, ":"},
	} {
		got := tc.key.String()
		assert.Equal(t, tc.want, got, "%#v", tc.key)
		back, err := ParseSubKey(got)
		require.NoError(t, err, got)
		assert.Equal(t, tc.key, back, got)
	}
	for _, bad := range []string{"", "no-colon", `a\`, `a\x:b`, `a\c`} {
		_, err := ParseSubKey(bad)
		assert.Error(t, err, "%q", bad)
	}
}

// TestHeadersWithout: every pair of a name given goes, the rest keep their order; a
// list without any of them is returned as it is, without an allocation, and the
// original list is never changed.
func TestHeadersWithout(t *testing.T) {
	h := Headers{"a", "1", "x", "2", "b", "3", "y", "4", "x", "5"}
	assert.Equal(t, Headers{"a", "1", "b", "3"}, h.Without("x", "y"))
	assert.Equal(t, Headers{"a", "1", "x", "2", "b", "3", "y", "4", "x", "5"}, h, "unchanged")
	assert.Equal(t, Headers{}, Headers{"x", "1"}.Without("x"))
	keep := Headers{"a", "1", "b", "2"}
	assert.Equal(t, 0.0, testing.AllocsPerRun(100, func() { keep = keep.Without("x", "y") }))
	assert.Equal(t, Headers{"a", "1", "b", "2"}, keep)
}
