package logshell

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/activemq-go/broker/persistence/internal/optparse"
)

// Policy says when a store syncs its log, and so what a power cut may lose (a crash of
// the process alone loses nothing under any policy: written data is in the operating
// system's page cache). An adapter gives the policies its own type, names and docs
// (PolicyNames); the values are these.
type Policy uint8

const (
	// SyncEach syncs every group of batches that holds a Commit(Sync) before that Commit
	// returns (Config.SyncCommits); groups of Async commits only are not synced.
	SyncEach Policy = iota
	// SyncPeriodic syncs every interval if anything was written; Commit(Sync) returns
	// once the batch is written.
	SyncPeriodic
	// SyncNever does not sync on the commit path: the adapter syncs when it rolls a
	// segment, before every checkpoint and at Close.
	SyncNever
)

// PolicyNames is how an adapter calls the policies: its type's name and the
// configuration names, in Policy order.
type PolicyNames struct {
	Type    string    // "SyncStrategy"
	Names   [3]string // {"always", "periodic", "never"}
	Unknown string    // the problem of a name that is none of them: "unknown sync strategy"
}

// String returns the configuration name of p, or Type(p) for a value out of range.
func (n *PolicyNames) String(p Policy) string {
	if int(p) < len(n.Names) {
		return n.Names[p]
	}
	return n.Type + "(" + strconv.Itoa(int(p)) + ")"
}

// Check returns nil for a known policy, else the error Open gives for it, wrapping
// errOption.
func (n *PolicyNames) Check(p Policy, errOption error) error {
	if p > SyncNever {
		return fmt.Errorf("%w: unknown %s %d", errOption, n.Type, p)
	}
	return nil
}

// PolicyKey is the configuration key name that takes one of the names (case-insensitively,
// blanks trimmed) and sets the policy through set.
func PolicyKey[T any](name string, n *PolicyNames, set func(o *T, p Policy)) optparse.Key[T] {
	allowed := n.Names[0] + ", " + n.Names[1] + " or " + n.Names[2]
	return optparse.Key[T]{Name: name, Allowed: allowed, Set: func(o *T, raw any) string {
		s, _ := raw.(string)
		i := slices.Index(n.Names[:], strings.ToLower(strings.TrimSpace(s)))
		if i < 0 {
			return n.Unknown
		}
		set(o, Policy(i))
		return ""
	}}
}
