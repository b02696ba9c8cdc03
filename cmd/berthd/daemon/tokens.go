package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/berthd/berth/authz"
)

// LoadTokens reads a static token file: one token per line,
//
//	TOKEN ROLE[,ROLE...] [PROJECT_ID [USER_ID]]
//
// with fields separated by spaces or tabs. Blank lines and lines starting
// with # are ignored. A request carrying X-Auth-Token: TOKEN acts with
// those roles ("admin" may do everything; Placement's other policies name
// "service", "reader" and so on) for that project and user; a missing
// PROJECT_ID or USER_ID is empty. A token may appear only once.
//
// The file holds secrets: LoadTokens logs a warning when group or others
// may read it.
func LoadTokens(path string, logger *slog.Logger) (map[string]authz.Credentials, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 {
		logger.Warn("token file is readable by group or others; chmod 600 it", "path", path,
			"mode", fmt.Sprintf("%04o", fi.Mode().Perm()))
	}
	tokens := map[string]authz.Credentials{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		token, p, err := parseTokenLine(line)
		if err != nil {
			return nil, fmt.Errorf("token file %s:%d: %w", path, n, err)
		}
		if _, dup := tokens[token]; dup {
			return nil, fmt.Errorf("token file %s:%d: token repeated", path, n)
		}
		tokens[token] = p
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("token file %s: no tokens", path)
	}
	return tokens, nil
}

func parseTokenLine(line string) (string, authz.Credentials, error) {
	fields := strings.Fields(line)
	if len(fields) < 2 || len(fields) > 4 {
		return "", authz.Credentials{}, errors.New("want TOKEN ROLE[,ROLE...] [PROJECT_ID [USER_ID]]")
	}
	var p authz.Credentials
	for _, role := range strings.Split(fields[1], ",") {
		if role == "" {
			return "", p, errors.New("empty role")
		}
		p.Roles = append(p.Roles, role)
	}
	if len(fields) > 2 {
		p.ProjectID = fields[2]
	}
	if len(fields) > 3 {
		p.UserID = fields[3]
	}
	return fields[0], p, nil
}
