//go:build unix

package main

import (
	"os"
	"syscall"
)

// heapProfileSignal asks a broker started with --heapprofile for a heap profile.
var heapProfileSignal os.Signal = syscall.SIGUSR1
