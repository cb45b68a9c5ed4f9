//go:build !unix

package main

import "os"

// heapProfileSignal is nil where there is no SIGUSR1: --heapprofile is refused.
var heapProfileSignal os.Signal
