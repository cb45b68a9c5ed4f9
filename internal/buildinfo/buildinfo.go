// Package buildinfo says which build of the broker is running: its version, the commit
// it was built from, when, and with which Go. A release build sets them with the
// linker (see Version); any other build takes what the Go toolchain recorded in the
// binary (the module version and the VCS stamp of `go build` in a git checkout).
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// Set by a release build:
//
//	go build -ldflags "-X github.com/activemq-go/broker/internal/buildinfo.version=1.2.0 \
//	  -X github.com/activemq-go/broker/internal/buildinfo.date=2026-12-08T10:00:00Z" ./cmd/broker
var (
	version string
	commit  string
	date    string
)

// Info describes the running build.
type Info struct {
	// Version is the release version, or the module's pseudo-version, or "devel" for
	// a build without either (go run, or a build outside a git checkout).
	Version string `json:"version"`
	// Commit is the VCS revision built from ("" if unknown); Modified says the work
	// tree had uncommitted changes.
	Commit   string `json:"commit"`
	Modified bool   `json:"modified"`
	// Date is when it was built (release builds) or the commit's time (RFC 3339; ""
	// if unknown).
	Date      string `json:"date"`
	GoVersion string `json:"go_version"`
}

var (
	once sync.Once
	info Info
)

// Get returns the build's information.
func Get() Info {
	once.Do(func() { info = read(debug.ReadBuildInfo) })
	return info
}

// read builds the Info from the linker's values and what readBuild returns.
func read(readBuild func() (*debug.BuildInfo, bool)) Info {
	in := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version()}
	bi, ok := readBuild()
	if ok {
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = strings.TrimSuffix(bi.Main.Version, "+dirty")
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if in.Commit == "" {
					in.Commit = s.Value
				}
			case "vcs.time":
				if in.Date == "" {
					in.Date = s.Value
				}
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
		if bi.GoVersion != "" {
			in.GoVersion = bi.GoVersion
		}
	}
	if in.Version == "" {
		in.Version = "devel"
	}
	return in
}

// ShortCommit is the commit's first 12 hex digits ("" if unknown), with "-dirty" when
// the work tree was modified.
func (i Info) ShortCommit() string {
	c := i.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if c != "" && i.Modified {
		c += "-dirty"
	}
	return c
}

// String is the one line `broker version` prints.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "broker %s", i.Version)
	if c := i.ShortCommit(); c != "" {
		fmt.Fprintf(&b, " (commit %s", c)
		if i.Date != "" {
			fmt.Fprintf(&b, ", %s", i.Date)
		}
		b.WriteString(")")
	} else if i.Date != "" {
		fmt.Fprintf(&b, " (%s)", i.Date)
	}
	fmt.Fprintf(&b, " %s %s/%s", i.GoVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
