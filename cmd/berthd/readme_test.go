package main

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEListsEveryOption: README's configuration table has a row for
// every flag, with its environment variables (the table is written by
// hand from `berthd --help`).
func TestREADMEListsEveryOption(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(readme), "\n") {
		if f, _, ok := strings.Cut(strings.TrimPrefix(line, "| `--"), "`"); ok && strings.HasPrefix(line, "| `--") {
			name, _, _ := strings.Cut(f, " ")
			rows[name] = line
		}
	}
	for _, o := range options() {
		row, ok := rows[o.flag]
		if !ok {
			t.Errorf("README's configuration table has no row for --%s", o.flag)
			continue
		}
		for _, e := range o.envs {
			if !strings.Contains(row, "$"+e) {
				t.Errorf("README's row for --%s lacks $%s", o.flag, e)
			}
		}
	}
}
