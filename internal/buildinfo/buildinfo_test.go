package buildinfo

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func stamp(version string, settings ...string) func() (*debug.BuildInfo, bool) {
	bi := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Path: "m", Version: version}}
	for i := 0; i+1 < len(settings); i += 2 {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return func() (*debug.BuildInfo, bool) { return bi, true }
}

func TestReadTakesTheVCSStamp(t *testing.T) {
	in := read(stamp("v0.0.0-20261208005110-4c2ede8abcde+dirty",
		"vcs.revision", "4c2ede8abcdef0123456789", "vcs.time", "2026-12-08T00:51:10Z", "vcs.modified", "true"))
	assert.Equal(t, "v0.0.0-20261208005110-4c2ede8abcde", in.Version)
	assert.Equal(t, "4c2ede8abcde-dirty", in.ShortCommit())
	assert.Equal(t, "2026-12-08T00:51:10Z", in.Date)
	assert.Equal(t, "go1.99", in.GoVersion)
	assert.Contains(t, in.String(), "broker v0.0.0-20261208005110-4c2ede8abcde (commit 4c2ede8abcde-dirty, 2026-12-08T00:51:10Z) go1.99 ")
}

func TestReadWithoutVersionSaysDevel(t *testing.T) {
	in := read(stamp("(devel)"))
	assert.Equal(t, "devel", in.Version)
	assert.Empty(t, in.ShortCommit())
	in = read(func() (*debug.BuildInfo, bool) { return nil, false })
	assert.Equal(t, "devel", in.Version)
}

func TestLinkerValuesWin(t *testing.T) {
	version, commit, date = "1.2.0", "abc", "2026-12-01T00:00:00Z"
	defer func() { version, commit, date = "", "", "" }()
	in := read(stamp("v0.0.0-x", "vcs.revision", "def", "vcs.time", "2026-11-01T00:00:00Z"))
	assert.Equal(t, Info{Version: "1.2.0", Commit: "abc", Date: "2026-12-01T00:00:00Z", GoVersion: "go1.99"}, in)
}
