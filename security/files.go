package security

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"
)

// fileRole is what a user source file holds.
type fileRole uint8

const (
	jaasUsersFile  fileRole = iota // user=password
	jaasGroupsFile                 // group=user1,user2
	certUsersFile                  // user=DN
	certGroupsFile                 // group=user1,user2
)

var roleNames = [...]string{"JAAS users file", "JAAS groups file", "certificate users file", "certificate groups file"}

// fileSpec is one configured file.
type fileSpec struct {
	role   fileRole
	path   string
	reload bool
}

func (f fileSpec) String() string { return roleNames[f.role] + " " + f.path }

// fileStat is what tells a file changed: its modification time and size, or that
// it could not be looked at.
type fileStat struct {
	mod     int64 // unix nanos
	size    int64
	missing bool
}

// fileContents is a file as last read.
type fileContents struct {
	stat  fileStat
	props []property
}

// fileSpecs lists the files cfg names, in a fixed order.
func fileSpecs(cfg *Config) ([]fileSpec, error) {
	var specs []fileSpec
	if j := cfg.JAAS; j != nil {
		if j.Users == "" {
			return nil, fmt.Errorf("security: plugins.jaasProperties.users is empty; give the path of the users.properties file (user=password lines)")
		}
		specs = append(specs, fileSpec{jaasUsersFile, j.Users, j.Reload})
		if j.Groups != "" {
			specs = append(specs, fileSpec{jaasGroupsFile, j.Groups, j.Reload})
		}
	}
	if c := cfg.CertificateUsers; c != nil {
		if c.File == "" {
			return nil, fmt.Errorf("security: plugins.certificateUsers.file is empty; give the path of the file of user=DN lines")
		}
		specs = append(specs, fileSpec{certUsersFile, c.File, c.Reload})
		if c.Groups != "" {
			specs = append(specs, fileSpec{certGroupsFile, c.Groups, c.Reload})
		}
	}
	return specs, nil
}

// stat looks at the file.
func (f fileSpec) stat() fileStat {
	fi, err := os.Stat(f.path)
	if err != nil {
		return fileStat{missing: true}
	}
	return fileStat{mod: fi.ModTime().UnixNano(), size: fi.Size()}
}

// read reads and parses the file; the stat is taken first, so that a change while
// reading is seen by the next check.
func (f fileSpec) read() (fileContents, error) {
	st := f.stat()
	data, err := os.ReadFile(f.path)
	if err != nil {
		return fileContents{}, fmt.Errorf("security: %s: %w", f, err)
	}
	props, err := parseProperties(data)
	if err != nil {
		return fileContents{}, fmt.Errorf("security: %s, %w", f, err)
	}
	return fileContents{stat: st, props: props}, nil
}

// reloadInterval is how often the files with Reload are looked at, at most, as
// ActiveMQ's reload=true does: on a login, if a second has passed.
const reloadInterval = time.Second

// maybeReload re-reads the files with Reload that changed, at most once per
// reloadInterval and by one caller at a time (the others go on with the users they
// have). A file that fails to read or parse keeps the users as they were and is
// logged once until it changes again.
func (s *Service) maybeReload() {
	if !s.reload {
		return
	}
	now := s.now().UnixNano()
	next := s.nextCheck.Load()
	if now < next || !s.nextCheck.CompareAndSwap(next, now+int64(reloadInterval)) {
		return
	}
	if !s.reloadMu.TryLock() {
		return
	}
	defer s.reloadMu.Unlock()

	prev := s.dir.Load()
	stats := make([]fileStat, len(s.files))
	changed := false
	for i, f := range s.files {
		stats[i] = prev.files[i].stat
		if f.reload {
			stats[i] = f.stat()
			changed = changed || stats[i] != prev.files[i].stat
		}
	}
	if !changed || slices.Equal(stats, s.failedStats) {
		return
	}
	d, err := s.build(prev, stats)
	if err != nil {
		s.failedStats = stats
		s.log.Error("security: re-reading the users failed; the previous users stay in force until the file is fixed", slog.Any("err", err))
		return
	}
	s.failedStats = nil
	d.gen = s.gen.Add(1)
	s.dir.Store(d)
	s.stats.reloads.Add(1)
	s.log.Info("security: users re-read", slog.Uint64("generation", d.gen),
		slog.Int("users", len(d.accounts)), slog.Int("certificateUsers", len(d.certs)))
}
