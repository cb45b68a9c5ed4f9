package pgstore

// Test hooks.

// PauseRenewal stops the lease renewal of s, as a hung broker would stop renewing.
func PauseRenewal(s *Store) { s.lease.paused.Store(true) }

// HolderID is the lease holder id of s.
func HolderID(s *Store) string { return s.lease.holder }

// TableName is the name of one of s's tables: "msgs", "acks", "sub_pending", "dests",
// "lock" or "schema_version".
func TableName(s *Store, table string) string { return s.t.prefix + table }
