// Package setting reads configuration values as ActiveMQ users write them (sizes such
// as "64mb", durations such as "30s" or 30000 milliseconds, whole numbers, booleans) and
// describes a bad one with Error, which names the key, the value (secrets redacted) and
// what is allowed.
//
// config parses the YAML file with it, and each persistence adapter parses its own block
// of options with it, so it imports only the standard library: an adapter that reads
// "journalMaxFileLength: 32mb" does not pull in viper, yaml or fsnotify.
package setting
