package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/berthd/berth/httpapi/client"
)

// Defaults of the global flags.
const (
	DefaultURL     = "http://127.0.0.1:8778"
	DefaultToken   = "admin" // what noauth2, berthd's default, takes as the admin user
	DefaultTimeout = 60 * time.Second
)

// IO is where a run reads and writes. StderrTTY says whether Stderr is a
// terminal, which turns progress lines into a redrawn progress bar.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	StderrTTY      bool
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
}

// globals are the flags every command takes.
type globals struct {
	url, token, output string
	timeout            time.Duration
}

var globalNames = map[string]bool{"url": true, "token": true, "o": true, "output": true, "timeout": true}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.url, "url", g.url, "Berth (Placement) endpoint; env BERTH_URL")
	fs.StringVar(&g.token, "token", g.token, "X-Auth-Token to send; env BERTH_TOKEN or OS_TOKEN")
	fs.StringVar(&g.output, "o", g.output, "output format: table or json")
	fs.StringVar(&g.output, "output", g.output, "same as -o")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "bound on each HTTP request (0: none)")
}

// env is what a command runs with.
type env struct {
	ctx    context.Context
	io     IO
	g      *globals
	client *Client
}

func (e *env) json() bool { return e.g.output == "json" }

// printJSON writes the server's JSON answer indented.
func (e *env) printJSON(raw []byte) error {
	var b bytes.Buffer
	if err := json.Indent(&b, bytes.TrimSpace(raw), "", "  "); err != nil {
		// Not JSON (a scriptlet's source): print as is.
		_, err := e.io.Stdout.Write(raw)
		return err
	}
	b.WriteByte('\n')
	_, err := e.io.Stdout.Write(b.Bytes())
	return err
}

// printValue writes v as indented JSON (for answers berth composes from
// several requests).
func (e *env) printValue(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.printJSON(raw)
}

// command is one subcommand. setup registers its flags on fs and returns
// the function that runs it with the positional arguments.
type command struct {
	name    string // "capacity", or "scriptlet set" for a subcommand of a group
	args    string // synopsis of positional arguments and main flags
	summary string
	help    string // paragraphs after the summary (optional)
	example string
	setup   func(fs *flag.FlagSet) func(e *env, args []string) error
}

// Exit statuses, conventional for scripts (docs/cli.md, berth --help).
const (
	exitOK      = 0 // done; a lookup found something
	exitNothing = 1 // a lookup found nothing: an empty list, no valid host
	exitUsage   = 2 // bad command line use
	exitRefused = 3 // the server refused the request (a Placement error)
	exitFailed  = 4 // the server could not be reached or did not answer, or a local failure
	// exitFindings is berth audit's status when findings remain (nova-manage
	// placement audit's 3, which here is a refusal).
	exitFindings = 5
)

// errNothing is returned by a lookup that found nothing, once it has
// printed so: exit status 1.
var errNothing error = exitCode(exitNothing)

// printableLines is s made Printable line by line: its own line breaks
// stay.
func printableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Printable(l)
	}
	return strings.Join(lines, "\n")
}

// nothingFound is a lookup's answer that it found nothing, to be printed
// as an error (exit status 1, not the refusal's 3).
type nothingFound struct{ error }

// found is err, or errNothing when err is nil and the lookup found
// nothing (ok false).
func found(ok bool, err error) error {
	if err == nil && !ok {
		return errNothing
	}
	return err
}

// usageError is bad command line use: exit code 2.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// commands lists every subcommand in the order of berth --help.
func commands() []*command {
	var cs []*command
	cs = append(cs, capacityCommand(), usageCommand(), providersCommand())
	cs = append(cs, providerExtraCommands()...)
	cs = append(cs, claimCommands()...)
	cs = append(cs, evacuateCommands()...)
	cs = append(cs, scriptletCommands()...)
	cs = append(cs, shadowCommands("scriptlet")...)
	cs = append(cs, policyCommands()...)
	cs = append(cs, shadowCommands("policy")...)
	cs = append(cs, configCommands()...)
	cs = append(cs, limitsCommands()...)
	cs = append(cs, auditCommand())
	cs = append(cs, benchCommands()...)
	cs = append(cs, importCommands()...)
	cs = append(cs, demoCommand())
	return cs
}

// groups are the commands that only hold subcommands (a group of a
// group, such as "scriptlet shadow", is named by both words).
var groups = map[string]struct{ summary, example string }{
	"scriptlet shadow": {"A stored scriptlet run in shadow of every claim the default policy ranks",
		"berth scriptlet shadow start prefer-rack-a\nberth scriptlet shadow show prefer-rack-a\nberth scriptlet shadow stop prefer-rack-a"},
	"policy shadow": {"A stored scheduling policy run in shadow of every claim the default policy ranks",
		"berth policy shadow start pack\nberth policy shadow show pack\nberth policy shadow stop pack"},
	"scriptlet": {"Starlark scriptlets stored on the server",
		"berth scriptlet set refuse-foo refuse-foo.star\nberth scriptlet test refuse-foo --name foo"},
	"policy": {"Scheduling policies and the units they are built from",
		"berth policy units\nberth policy create spread.json\nberth explain --resources VCPU:2 --policy spread"},
	"import": {"Bring state over from OpenStack Placement", "berth import placement --source mysql+pymysql://placement:secret@db/placement --database-url postgres://berth@db/berth"},
	"export": {"Write Berth's state back to OpenStack Placement", "berth export placement --target mysql+pymysql://placement:secret@db/placement --database-url postgres://berth@db/berth"},
	"config": {"Server-wide settings (GET/PATCH /config)",
		"berth config set instances.placement.scriptlet @default.star\nberth config get"},
	"limits": {"Projects' limits (quotas): shown with their usage, set, deleted; the defaults",
		"berth limits set demo VCPU=40 MEMORY_MB=102400 consumers=10\nberth limits show demo"},
}

const mainUsage = `berth is the operator's client of a Berth placement service.

Usage: berth [global flags] COMMAND [flags] [args]

Commands:
%s
Global flags (anywhere on the line):
  --url URL        endpoint (env BERTH_URL, default %s)
  --token TOKEN    X-Auth-Token (env BERTH_TOKEN or OS_TOKEN, default %q: noauth2's admin)
  -o FORMAT        table (default) or json: the server's JSON, for scripts
  --timeout D      bound on each HTTP request (default %s)

Every request carries "OpenStack-API-Version: placement latest".
Exit status: 0 success (a lookup found something), 1 a lookup found nothing
(an empty list, no valid host), 2 bad usage, 3 the server refused the request
(its error is printed), 4 the server could not be reached or did not answer,
or another failure (a file that cannot be read); berth audit: 5 findings remain.
Run "berth COMMAND --help" for a command's flags and an example.

Example:
  berth capacity --resources VCPU:4,MEMORY_MB:16384
`

func mainHelp(cs []*command) string {
	var b strings.Builder
	t := NewTable()
	seen := map[string]bool{}
	for _, c := range cs {
		group, sub, isSub := strings.Cut(c.name, " ")
		if isSub {
			if _, isGroup := groups[group]; !isGroup {
				// A subcommand of a command ("providers state").
				t.Row("    "+sub, c.summary)
				continue
			}
			if !seen[group] {
				seen[group] = true
				t.Row("  "+group, groups[group].summary)
			}
			t.Row("    "+sub, c.summary)
			continue
		}
		t.Row("  "+c.name, c.summary)
	}
	t.Render(&b)
	return fmt.Sprintf(mainUsage, b.String(), DefaultURL, DefaultToken, DefaultTimeout)
}

// Main runs berth with args (without the program name) and returns the
// exit status: exitOK, exitNothing, exitUsage, exitRefused or exitFailed
// (see their constants).
func Main(ctx context.Context, args []string, stdio IO) int {
	if stdio.Getenv == nil {
		stdio.Getenv = os.Getenv
	}
	if stdio.Stdin == nil {
		stdio.Stdin = strings.NewReader("")
	}
	g := &globals{
		url:     firstNonEmpty(stdio.Getenv("BERTH_URL"), DefaultURL),
		token:   firstNonEmpty(stdio.Getenv("BERTH_TOKEN"), stdio.Getenv("OS_TOKEN"), DefaultToken),
		output:  "table",
		timeout: DefaultTimeout,
	}
	cs := commands()
	top := flag.NewFlagSet("berth", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	g.register(top)
	help := top.Bool("help", false, "")
	top.BoolVar(help, "h", false, "")
	if err := top.Parse(args); err != nil {
		fmt.Fprintf(stdio.Stderr, "berth: %v\nRun \"berth --help\" for usage.\n", err)
		return 2
	}
	args = top.Args()
	if *help || len(args) == 0 || args[0] == "help" {
		if len(args) > 1 && args[0] == "help" {
			return Main(ctx, append(args[1:], "--help"), stdio)
		}
		if len(args) == 0 && !*help {
			fmt.Fprint(stdio.Stderr, mainHelp(cs))
			return 2
		}
		fmt.Fprint(stdio.Stdout, mainHelp(cs))
		return 0
	}

	cmd, rest := findCommand(cs, args)
	if cmd == nil {
		if group, rest := findGroup(args); group != "" {
			return groupHelp(stdio, cs, group, rest)
		}
		fmt.Fprintf(stdio.Stderr, "berth: unknown command %q\nRun \"berth --help\" for the commands.\n", args[0])
		return 2
	}
	fs := flag.NewFlagSet("berth "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse errors are printed below, with the command's name
	run := cmd.setup(fs)
	if cmd.name != "bench" && cmd.name != "seed" {
		g.register(fs)
	}
	// The flag package calls Usage on both a bad flag and -h; the help is
	// printed only when asked for.
	fs.Usage = func() {}
	var pos []string
	var err error
	if cmd.name == "bench" || cmd.name == "seed" {
		// The load tool parses its own flags.
		pos = rest
	} else if pos, err = parseInterspersed(fs, rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandHelp(stdio.Stdout, cmd, fs)
			return 0
		}
		fmt.Fprintf(stdio.Stderr, "berth %s: %v\nRun \"berth %s --help\" for usage.\n", cmd.name, err, cmd.name)
		return 2
	}
	if _, err := EndpointURL(g.url); err != nil {
		fmt.Fprintf(stdio.Stderr, "berth %s: --url %q: %v\n", cmd.name, g.url, err)
		return exitUsage
	}
	if g.output != "table" && g.output != "json" {
		fmt.Fprintf(stdio.Stderr, "berth %s: -o must be table or json, not %q\n", cmd.name, g.output)
		return 2
	}
	if g.output == "table" && cmd.name != "bench" && cmd.name != "seed" {
		// The load tool draws its progress on the terminal itself.
		stdio.Stdout = terminalWriter{stdio.Stdout}
	}
	e := &env{ctx: ctx, io: stdio, g: g, client: NewClient(g.url, g.token, g.timeout)}
	if err := run(e, pos); err != nil {
		var u usageError
		if errors.As(err, &u) {
			fmt.Fprintf(stdio.Stderr, "berth %s: %s\nRun \"berth %s --help\" for usage.\n", cmd.name, u.msg, cmd.name)
			return 2
		}
		var ec exitCode
		if errors.As(err, &ec) {
			return int(ec)
		}
		// An error repeats the server's words, maybe a provider's name.
		fmt.Fprintf(stdio.Stderr, "berth %s: %s\n", cmd.name, printableLines(err.Error()))
		var nf nothingFound
		var ae *client.Error
		switch {
		case errors.As(err, &nf):
			return exitNothing
		case errors.As(err, &ae):
			return exitRefused
		}
		return exitFailed
	}
	return exitOK
}

// exitCode is returned by commands that already reported their failure
// (the load tool) and only need the status passed on.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// findCommand matches the longest command name at the start of args.
func findCommand(cs []*command, args []string) (*command, []string) {
	if len(args) >= 3 {
		for _, c := range cs {
			if c.name == args[0]+" "+args[1]+" "+args[2] {
				return c, args[3:]
			}
		}
	}
	if len(args) >= 2 {
		for _, c := range cs {
			if c.name == args[0]+" "+args[1] {
				return c, args[2:]
			}
		}
	}
	for _, c := range cs {
		if c.name == args[0] {
			return c, args[1:]
		}
	}
	return nil, nil
}

// findGroup matches the longest group name at the start of args ("" if
// none) and returns it with the arguments after it.
func findGroup(args []string) (string, []string) {
	if len(args) >= 2 {
		if _, ok := groups[args[0]+" "+args[1]]; ok {
			return args[0] + " " + args[1], args[2:]
		}
	}
	if _, ok := groups[args[0]]; ok {
		return args[0], args[1:]
	}
	return "", nil
}

// groupHelp prints the subcommands of a group ("berth policy", "berth
// policy shadow") given the arguments after it: exit 0 when help was
// asked for, 2 otherwise (no subcommand, or an unknown one: said so
// first).
func groupHelp(stdio IO, cs []*command, group string, rest []string) int {
	asked := len(rest) > 0 && (rest[0] == "-h" || rest[0] == "--help" || rest[0] == "help")
	var subs, verbs []string
	for _, c := range cs {
		if sub, ok := strings.CutPrefix(c.name, group+" "); ok {
			subs = append(subs, fmt.Sprintf("  %s\n        %s.\n", strings.TrimSpace("berth "+c.name+" "+c.args), c.summary))
			if verb, _, _ := strings.Cut(sub, " "); !slices.Contains(verbs, verb) {
				verbs = append(verbs, verb)
			}
		}
	}
	w := stdio.Stdout
	if !asked {
		w = stdio.Stderr
		if len(rest) > 0 {
			fmt.Fprintf(w, "berth %s: unknown subcommand %q\n\n", group, rest[0])
		} else {
			fmt.Fprintf(w, "berth %s: missing subcommand: %s\n\n", group, orList(verbs))
		}
	}
	fmt.Fprintf(w, "berth %s: %s.\n\nUsage:\n", group, groups[group].summary)
	for _, s := range subs {
		fmt.Fprint(w, s)
	}
	fmt.Fprintf(w, "\nExample:\n%s\nRun \"berth %s SUBCOMMAND --help\" for its flags.\n", indent(groups[group].example), group)
	if asked {
		return 0
	}
	return 2
}

// orList is words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

func printCommandHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s\n\n%s.\n", strings.TrimSpace("berth "+c.name+" "+c.args), c.summary)
	if c.help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.help, "\n"))
	}
	var flags []string
	fs.VisitAll(func(f *flag.Flag) {
		if globalNames[f.Name] {
			return
		}
		typ, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if typ != "" {
			line += " " + typ
		}
		line += "\n        " + usage
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "-1" && f.DefValue != "false" && f.DefValue != "[]" && f.DefValue != "0s" {
			line += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		flags = append(flags, line)
	})
	if len(flags) > 0 {
		sort.Strings(flags)
		fmt.Fprintf(w, "\nFlags:\n%s\n", strings.Join(flags, "\n"))
	}
	fmt.Fprintf(w, "\nGlobal flags: --url, --token, -o table|json, --timeout (see berth --help).\n")
	fmt.Fprintf(w, "\nExample:\n%s", indent(c.example))
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// parseInterspersed parses flags anywhere among the positional arguments
// (the flag package stops at the first positional one) and returns the
// positional arguments in order. Everything after "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		i := indexOf(args, "--")
		head, tail := args, []string(nil)
		if i >= 0 {
			head, tail = args[:i], args[i+1:]
		}
		if err := fs.Parse(head); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return append(pos, tail...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
		if i >= 0 {
			args = append(append(args, "--"), tail...)
		}
	}
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// argsN checks the number of positional arguments.
func argsN(args []string, names ...string) error {
	if len(args) != len(names) {
		if len(args) < len(names) {
			return usagef("missing %s", strings.Join(names[len(args):], " "))
		}
		return usagef("unexpected arguments %q", args[len(names):])
	}
	return nil
}
