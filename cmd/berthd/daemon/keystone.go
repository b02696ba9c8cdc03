package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/berthd/berth/internal/keystone"
)

// KeystoneConfig is Berth's identity for `--auth keystone`: where Keystone
// is, who Berth is there, and how long validated tokens are trusted.
type KeystoneConfig struct {
	// AuthURL is Keystone's Identity endpoint (http://HOST:5000/v3).
	AuthURL string
	// Username, Password (or PasswordFile, whose first line is the
	// password) and ProjectName are Berth's service user and its project;
	// UserDomainName and ProjectDomainName their domains (default
	// "Default").
	Username, Password, PasswordFile, ProjectName string
	UserDomainName, ProjectDomainName             string
	// ApplicationCredentialID and ApplicationCredentialSecret replace
	// the user and password.
	ApplicationCredentialID, ApplicationCredentialSecret string
	// CacheTTL is the longest a validated token is trusted without asking
	// Keystone again (never past its expiry). Default 5m.
	CacheTTL time.Duration
	// CacheSize bounds the token cache in entries. Default 10000.
	CacheSize int
	// Timeout bounds one request to Keystone. Default 10s.
	Timeout time.Duration
}

// defaultKeystone is KeystoneConfig's defaults.
func defaultKeystone() KeystoneConfig {
	return KeystoneConfig{
		UserDomainName: keystone.DefaultDomainName, ProjectDomainName: keystone.DefaultDomainName,
		CacheTTL: keystone.DefaultCacheTTL, CacheSize: keystone.DefaultCacheSize,
		Timeout: keystone.DefaultTimeout,
	}
}

// validate checks k for auth keystone. The password file is read later,
// by client.
func (k KeystoneConfig) validate() error {
	var errs []error
	if k.Password != "" && k.PasswordFile != "" {
		errs = append(errs, errors.New("keystone: give a password or a password file, not both"))
	}
	kc := k.keystone()
	if k.PasswordFile != "" && kc.Password == "" {
		kc.Password = "(from file)"
	}
	errs = append(errs, kc.Validate())
	if k.CacheTTL <= 0 {
		errs = append(errs, fmt.Errorf("keystone cache ttl %v: want a positive duration", k.CacheTTL))
	}
	if k.CacheSize < 1 {
		errs = append(errs, fmt.Errorf("keystone cache size %d: want at least 1", k.CacheSize))
	}
	if k.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("keystone timeout %v: want a positive duration", k.Timeout))
	}
	return errors.Join(errs...)
}

func (k KeystoneConfig) keystone() keystone.Config {
	return keystone.Config{
		AuthURL: k.AuthURL, Username: k.Username, Password: k.Password, ProjectName: k.ProjectName,
		UserDomainName: k.UserDomainName, ProjectDomainName: k.ProjectDomainName,
		ApplicationCredentialID: k.ApplicationCredentialID, ApplicationCredentialSecret: k.ApplicationCredentialSecret,
		CacheTTL: k.CacheTTL, CacheSize: k.CacheSize, Timeout: k.Timeout,
	}
}

// client logs Berth in to Keystone (see keystone.New): credentials that
// Keystone refuses are an error, and berthd does not start.
func (k KeystoneConfig) client(ctx context.Context, log *slog.Logger) (*keystone.Client, error) {
	kc := k.keystone()
	kc.Logger = log
	if k.PasswordFile != "" {
		data, err := os.ReadFile(k.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("keystone password file: %w", err)
		}
		kc.Password, _, _ = strings.Cut(string(data), "\n")
		kc.Password = strings.TrimSuffix(kc.Password, "\r")
		if kc.Password == "" {
			return nil, fmt.Errorf("keystone password file %s: the first line is empty", k.PasswordFile)
		}
	}
	return keystone.New(ctx, kc)
}
