package stompcodec

import (
	"fmt"
	"strings"
)

// Protocol versions.
const (
	V10 = "1.0"
	V11 = "1.1"
	V12 = "1.2"
)

// Supported is the list of versions this codec speaks, in the form of the version header of
// an ERROR frame sent when negotiation fails.
const Supported = "1.0,1.1,1.2"

// level is a version as a small ordered number, so rules can be picked without comparing
// strings on the hot path.
type level uint8

const (
	level10 level = iota
	level11
	level12
)

func (l level) String() string {
	switch l {
	case level11:
		return V11
	case level12:
		return V12
	}
	return V10
}

func parseLevel(v string) (level, bool) {
	switch v {
	case V10:
		return level10, true
	case V11:
		return level11, true
	case V12:
		return level12, true
	}
	return level10, false
}

// NegotiateVersion picks the highest version in the comma-separated accept-version list that
// is also in Supported. A missing or blank header means 1.0, as the spec says. Whitespace
// around list items is tolerated. If no version is shared it returns a *FrameError wrapping
// ErrNoCommonVersion.
func NegotiateVersion(acceptVersion string) (string, error) {
	if strings.TrimSpace(acceptVersion) == "" {
		return V10, nil
	}
	best, found := level10, false
	for item := range strings.SplitSeq(acceptVersion, ",") {
		if l, ok := parseLevel(strings.TrimSpace(item)); ok && (!found || l > best) {
			best, found = l, true
		}
	}
	if !found {
		return "", frameErr(ErrNoCommonVersion,
			fmt.Sprintf("client accepts %q, server supports %s", acceptVersion, Supported))
	}
	return best.String(), nil
}
