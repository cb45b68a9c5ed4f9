package main

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/term"
)

// The hashes `broker passwd` prints, as the configuration's passwordHash and the
// JAAS users file take them.
const (
	defaultBcryptCost = 10
	// argon2id parameters, as the PHC string records them: 64 MiB, 3 passes, 4 lanes.
	argon2Memory  = 64 * 1024 // KiB
	argon2Time    = 3
	argon2Threads = 4
	argon2SaltLen = 16
	argon2KeyLen  = 32
	// maxPasswordLine bounds the line read from standard input.
	maxPasswordLine = 4096
)

func newPasswdCommand() *cobra.Command {
	var cost int
	var useArgon2id bool
	cmd := &cobra.Command{
		Use:   "passwd",
		Short: "Print a password hash for plugins.simpleAuthentication.users[].passwordHash",
		Long: `Print a password hash for plugins.simpleAuthentication.users[].passwordHash or a
JAAS users.properties file: bcrypt by default, argon2id with --argon2id.

The password is read from the terminal, without echo, twice (both must match), or,
when standard input is not a terminal, from its first line (the line break is not
part of the password):

  broker passwd
  printf '%s\n' "$PASSWORD" | broker passwd --argon2id

It is never taken as an argument: arguments are visible to other users of the machine
(ps, /proc) and stay in the shell's history.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				// Not the argument itself: it may well be the password.
				return usageError(errors.New("passwd takes no arguments: the password is read from the terminal or " +
					"standard input, never from the command line, where ps and the shell history would show it"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if useArgon2id && cmd.Flags().Changed("cost") {
				return usageError(errors.New("--cost is bcrypt's; argon2id's parameters are fixed (m=65536,t=3,p=4)"))
			}
			if !useArgon2id && (cost < bcrypt.MinCost || cost > bcrypt.MaxCost) {
				return fmt.Errorf("--cost %d: use %d to %d", cost, bcrypt.MinCost, bcrypt.MaxCost)
			}
			password, err := readPassword(cmd.InOrStdin(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var hash string
			if useArgon2id {
				hash, err = hashArgon2id(password)
			} else {
				hash, err = hashBcrypt(password, cost)
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), hash)
			return err
		},
	}
	cmd.Flags().IntVar(&cost, "cost", defaultBcryptCost, "bcrypt cost: each step doubles the work of hashing and of every login")
	cmd.Flags().BoolVar(&useArgon2id, "argon2id", false, "print an argon2id hash (m=65536,t=3,p=4) instead of bcrypt")
	return cmd
}

// readPassword reads the password from in: from the terminal without echo, twice,
// prompting on prompt, when in is one; else its first line.
func readPassword(in io.Reader, prompt io.Writer) ([]byte, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return readTerminal(int(f.Fd()), prompt)
	}
	line, err := readLine(in)
	if err != nil {
		return nil, err
	}
	if len(line) == 0 {
		return nil, errors.New("empty password refused (standard input had no password on its first line)")
	}
	return line, nil
}

func readTerminal(fd int, prompt io.Writer) ([]byte, error) {
	fmt.Fprint(prompt, "Password: ")
	first, err := term.ReadPassword(fd)
	fmt.Fprintln(prompt)
	if err != nil {
		return nil, fmt.Errorf("reading the password: %w", err)
	}
	if len(first) == 0 {
		return nil, errors.New("empty password refused")
	}
	fmt.Fprint(prompt, "Again: ")
	again, err := term.ReadPassword(fd)
	fmt.Fprintln(prompt)
	if err != nil {
		return nil, fmt.Errorf("reading the password: %w", err)
	}
	if string(first) != string(again) {
		return nil, errors.New("the passwords do not match")
	}
	return first, nil
}

// readLine reads in's first line without its line break ("\n" or "\r\n").
func readLine(in io.Reader) ([]byte, error) {
	r := bufio.NewReaderSize(in, maxPasswordLine+2)
	line, err := r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, fmt.Errorf("the first line of standard input is longer than %d bytes", maxPasswordLine)
	case err != nil && !errors.Is(err, io.EOF):
		return nil, fmt.Errorf("reading the password: %w", err)
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r")
	return []byte(s), nil
}

func hashBcrypt(password []byte, cost int) (string, error) {
	if len(password) > 72 {
		return "", errors.New("password longer than 72 bytes, all bcrypt uses: use a shorter one or --argon2id")
	}
	h, err := bcrypt.GenerateFromPassword(password, cost)
	if err != nil {
		return "", fmt.Errorf("bcrypt: %w", err)
	}
	return string(h), nil
}

// hashArgon2id returns the PHC string of password's argon2id hash with a random salt:
// $argon2id$v=19$m=65536,t=3,p=4$<salt>$<key>, salt and key in unpadded base64.
func hashArgon2id(password []byte) (string, error) {
	salt := make([]byte, argon2SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("argon2id salt: %w", err)
	}
	key := argon2.IDKey(password, salt, argon2Time, argon2Memory, argon2Threads, argon2KeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argon2Memory, argon2Time, argon2Threads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}
