package cli

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Progress draws "LABEL ████░░░░░░ 40% 400/1000" on a terminal, redrawn
// in place at most ten times a second, and nothing when the writer is not
// a terminal. It is safe for concurrent use.
type Progress struct {
	mu          sync.Mutex
	w           io.Writer
	on          bool
	label       string
	done, total int
	drawn       time.Time
}

// NewProgress starts a progress bar on w when on is true (w is a
// terminal); otherwise every method does nothing.
func NewProgress(w io.Writer, on bool, label string, total int) *Progress {
	return &Progress{w: w, on: on, label: label, total: total}
}

// Add counts n more items done.
func (p *Progress) Add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	p.drawLocked(false)
}

// Set sets the items done and the total.
func (p *Progress) Set(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.total = done, total
	p.drawLocked(false)
}

// Clear erases the bar, so normal output can follow.
func (p *Progress) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.on && !p.drawn.IsZero() {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = time.Time{}
	}
}

func (p *Progress) drawLocked(force bool) {
	if !p.on || (!force && time.Since(p.drawn) < 100*time.Millisecond && p.done < p.total) {
		return
	}
	p.drawn = time.Now()
	fmt.Fprintf(p.w, "\r\x1b[K%s", ProgressLine(p.label, p.done, p.total))
}

// ProgressLine is the text of a progress bar, e.g.
// "seed ████░░░░░░░░░░░░░░░░  20% 200/1000".
func ProgressLine(label string, done, total int) string {
	f := 0.0
	if total > 0 {
		f = float64(done) / float64(total)
	}
	return fmt.Sprintf("%s %s %3.0f%% %d/%d", label, Bar(f, 20), f*100, done, total)
}
