// Package docstest runs the examples of README.md and docs/*.md as they are
// written and compares their output with what the documents show; it has
// no code of its own, only TestDocs and the tests of its Markdown reader.
//
// Each Markdown file is run on its own, in order, against a fresh berthd
// (its defaults, in the test's process, on a throwaway database) seeded
// with `berth demo` (unless the file runs `berth demo` itself), by one
// bash process, so that a variable, function or alias one block defines
// is there for the next. berth and berthd are built and on PATH (and in
// ./bin/); curl is the system's.
//
// The convention, for whoever writes documentation (docs/examples.md says
// it at more length):
//
//   - A fenced block tagged sh, shell, bash or console runs. If some line
//     starts with "$ " it is a transcript: each "$ " line is a command
//     (continued on the next lines while a quote or here-document is open
//     or the line ends with \), and the lines after it, up to the next
//     prompt, are its output. Otherwise the block is a script whose output
//     is not shown.
//   - A command whose output is shown must print it (JSON compared as
//     JSON, anything else line by line; "..." or "…" stands for what
//     varies or is left out: see match_test.go). A command whose output is
//     not shown must succeed: exit 0 and print no Placement error body.
//   - <!-- output --> right before a block: the block is the output of the
//     last command before it (a JSON answer shown apart from its command).
//   - <!-- file: NAME --> right before a block: the block is written to
//     NAME in the working directory (a policy file a command then reads).
//   - <!-- no-run: REASON --> right before a block: it is not run, and
//     the test lists it with its reason (go test -v).
//   - 127.0.0.1:8778 and localhost:8778 in commands are the test's server;
//     its address in output reads 127.0.0.1:8778. BERTH_URL points to it.
//   - Any other block is prose, but one holding a transcript ("$ " lines)
//     must be tagged or marked no-run.
//
// Files, in the order a document goes through them: docs_test.go
// (TestDocs: one subtest per file, the tools built once), markdown_test.go
// (Markdown to steps: fences, directives, transcripts), server_test.go
// (the berthd process), shell_test.go (the bash session), match_test.go
// (output against what the document shows); convention_test.go tests the
// reader and the comparison on small documents.
package docstest
