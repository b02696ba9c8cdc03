package operator

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// screenshots, when set, is where TestConsoleInBrowser writes its
// screenshots (docs/console: go test ./integration/operator/ -run
// Browser -screenshots ../../docs/console).
var screenshots = flag.String("screenshots", "", "directory for the console's screenshots")

// consolePages are the pages opened, what each must show, and the
// screenshot's name.
var consolePages = []struct {
	path, selector, want, shot string
}{
	{"/ui", "#classes", "VCPU", "overview"},
	{"/ui?by=trait", "#groups", "HW_CPU_X86_AVX2", "overview-by-trait"},
	{"/ui/hosts", "#heatmap", "", "hosts"},
	{"/ui/hosts", "#heat-legend", "100%", "hosts-legend"},
	{"/ui/providers/" + hostUUID(1), "#tree", "compute-1-gpu0", "provider"},
	{"/ui/providers/" + hostUUID(4), "#provider-name", `evil\x01<script>alert(1)</script>\u202e`, "provider-escaped"},
	{"/ui/fit?resources=VCPU:8,MEMORY_MB:16384", "#answer", "more fit", "fit"},
	{"/ui/fit?resources=VCPU:x", "#error", "Requested resource VCPU expected positive integer amount. Got: x.", "fit-refused"},
	{"/ui/fragmentation", "#fragments", "compute-2", "fragmentation"},
	{"/ui/refusals", "main", "lacked VCPU 4096", "refusals"},
	{"/ui/policies", "#policies", "spread <by> free RAM", "policies"},
	{"/ui/projects", "#projects", "/40", "projects"},
	{"/ui/policies", "#shadows", "spread", "policies-shadows"},
	{"/ui/audit", "#findings", "", "audit"},
}

// TestConsoleInBrowser opens every console page in headless Chromium
// against a seeded berthd: each must show its content, throw no
// JavaScript exception and log no console error, and every link on it
// must answer. The scriptlet test form is filled in and sent.
func TestConsoleInBrowser(t *testing.T) {
	base := startSeeded(t)
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		t.Fatalf("Chromium (Debian package chromium) is needed: %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath("/usr/bin/chromium"), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			problems = append(problems, fmt.Sprintf("exception: %s", e.ExceptionDetails.Text))
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				problems = append(problems, "console error")
			}
		}
	}); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	links := map[string]bool{}
	for _, p := range consolePages {
		sel := chromedp.CSS(p.selector)
		if err := chromedp.Do(ctx, chromedp.Navigate(base+p.path), chromedp.WaitVisible(sel)); err != nil {
			t.Errorf("%s: %v", p.path, err)
			continue
		}
		text, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Errorf("%s: %v", p.path, err)
			continue
		}
		hrefs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("a[href]")).map(a => a.getAttribute("href"))`))
		if err != nil {
			t.Errorf("%s: links: %v", p.path, err)
		}
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Errorf("%s: screenshot: %v", p.path, err)
		}
		if !strings.Contains(text, p.want) {
			t.Errorf("%s: %s does not show %q: %q", p.path, p.selector, p.want, text)
		}
		for _, h := range hrefs {
			links[h] = true
		}
		if *screenshots != "" {
			if err := os.WriteFile(filepath.Join(*screenshots, p.shot+".png"), shot, 0o644); err != nil {
				t.Error(err)
			}
		}
	}
	// The scriptlet test, from the policies page's form.
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/policies"),
		chromedp.WaitVisible(chromedp.CSS("#request")),
		chromedp.Submit(chromedp.CSS("#request")),
		chromedp.WaitVisible(chromedp.CSS("#test-log")),
	)
	if err != nil {
		t.Errorf("scriptlet test: %v", err)
	} else if log, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#test-log"))); err != nil || !strings.Contains(log, "candidates:") {
		t.Errorf("scriptlet test log: %q, %v", log, err)
	}
	mu.Lock()
	for _, pr := range problems {
		t.Errorf("JavaScript: %s", pr)
	}
	mu.Unlock()
	checkLinks(t, base, links)
}

// checkLinks fails the test for a link that does not answer 200 (after
// redirects). The console needs no token here: noauth2 acts as admin.
func checkLinks(t *testing.T, base string, links map[string]bool) {
	if len(links) < 10 {
		t.Errorf("only %d links found", len(links))
	}
	for h := range links {
		u, err := url.Parse(h)
		if err != nil || u.IsAbs() || !strings.HasPrefix(u.Path, "/ui") {
			t.Errorf("link %q leaves the console", h)
			continue
		}
		resp, err := http.Get(base + h)
		if err != nil {
			t.Errorf("link %s: %v", h, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("link %s: %d", h, resp.StatusCode)
		}
	}
}
