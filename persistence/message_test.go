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
