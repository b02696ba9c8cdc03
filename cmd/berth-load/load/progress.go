package load

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Meter reports the progress of a long run (seeding, claims) on a log
// writer. On a terminal it redraws one bar in place five times a second;
// elsewhere (a file, a pipe, CI) it writes a plain line every five
// seconds, so logs stay readable. It uses no terminal library: a
// carriage return and the bar.
type Meter struct {
	w     io.Writer
	tty   bool
	label string
	unit  string
	total int // 0: unknown (a run bounded by time); the bar then shows elapsed/limit
	limit time.Duration
	start time.Time

	mu    sync.Mutex
	drawn bool
}

// NewMeter returns a meter of total units (0 if unknown) on w. limit, for
// a run bounded by time, fills the bar by elapsed time instead.
func NewMeter(w io.Writer, label, unit string, total int, limit time.Duration) *Meter {
	return &Meter{w: w, tty: IsTerminal(w), label: label, unit: unit, total: total, limit: limit, start: time.Now()}
}

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Every is how often Show should be called.
func (m *Meter) Every() time.Duration {
	if m.tty {
		return 200 * time.Millisecond
	}
	return 5 * time.Second
}

// Show reports done units so far; extra is appended (e.g. "3 conflicts").
func (m *Meter) Show(done int, extra string) {
	if m == nil || m.w == io.Discard {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	elapsed := time.Since(m.start)
	rate := float64(done) / elapsed.Seconds()
	count := fmt.Sprint(done)
	if m.total > 0 {
		count = fmt.Sprintf("%d/%d", done, m.total)
	}
	text := fmt.Sprintf("%s: %s %s, %.0f/s, %s", m.label, count, m.unit, rate, elapsed.Round(time.Second))
	if extra != "" {
		text += ", " + extra
	}
	if !m.tty {
		fmt.Fprintln(m.w, text)
		return
	}
	frac := 0.0
	switch {
	case m.total > 0:
		frac = float64(done) / float64(m.total)
	case m.limit > 0:
		frac = elapsed.Seconds() / m.limit.Seconds()
	}
	frac = min(max(frac, 0), 1)
	const width = 30
	fill := int(frac * width)
	fmt.Fprintf(m.w, "\r[%s%s] %3.0f%% %s\033[K", strings.Repeat("#", fill), strings.Repeat(".", width-fill), 100*frac, text)
	m.drawn = true
}

// Done ends the bar's line on a terminal; the final figures are the
// report's business.
func (m *Meter) Done() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tty && m.drawn {
		fmt.Fprint(m.w, "\r\033[K")
		m.drawn = false
	}
}

// tick calls fn every m.Every() until the returned stop function is
// called; stop waits for the last call to end and clears the bar.
func (m *Meter) tick(fn func()) (stop func()) {
	if m == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(m.Every())
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fn()
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		m.Done()
	}
}
