package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the test types on master, the command reads
// slave as its terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err, "a pseudo-terminal (devpts) is needed to test reading from a terminal")
	t.Cleanup(func() { _ = m.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	// Drain what the terminal writes back, so that it never blocks.
	go func() { _, _ = io.Copy(io.Discard, m) }()
	return m, s
}

func TestPasswdFromTerminal(t *testing.T) {
	for _, tt := range []struct {
		name, typed, wantErr string
	}{
		{"twice the same", "typed pw\ntyped pw\n", ""},
		{"two different", "typed pw\ntyped pX\n", "the passwords do not match"},
		{"empty", "\n", "empty password refused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			master, slave := openPTY(t)
			_, err := io.WriteString(master, tt.typed)
			require.NoError(t, err)
			var stderr bytes.Buffer
			root := newRootCommand()
			var out bytes.Buffer
			root.SetArgs([]string{"passwd", "--cost", "4"})
			root.SetIn(slave)
			root.SetOut(&out)
			root.SetErr(&stderr)
			err = root.Execute()
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Empty(t, out.String())
				return
			}
			require.NoError(t, err)
			assert.Contains(t, stderr.String(), "Password: ")
			assert.Contains(t, stderr.String(), "Again: ")
			hash := oneHash(t, out.String())
			assert.NoError(t, bcrypt.CompareHashAndPassword([]byte(hash), []byte("typed pw")))
		})
	}
}
