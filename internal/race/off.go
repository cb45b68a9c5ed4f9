//go:build !race

package race

// Enabled reports whether the program was built with -race.
const Enabled = false
