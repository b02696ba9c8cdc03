package operator

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestConsoleLogoutAndLegend: the console offers "Log out" only to
// someone logged in (a session cookie), not to a visitor the server lets
// in as admin without a token, nor after logging out; the hosts' heat map
// has a legend from 0% to 100% in the map's colours.
func TestConsoleLogoutAndLegend(t *testing.T) {
	base := startSeeded(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	page := func(path string, cookie *http.Cookie) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	const logout = `action="/ui/logout"`
	if p := page("/ui", nil); strings.Contains(p, logout) || strings.Contains(p, "Log out") {
		t.Errorf("nobody logged in, the page offers to log out:\n%s", p)
	}
	if p := page("/ui/login", nil); strings.Contains(p, "Log out") {
		t.Errorf("the login page offers to log out:\n%s", p)
	}

	resp, err := client.PostForm(base+"/ui/login", url.Values{"token": {"admin"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Value != "" {
			session = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || session == nil {
		t.Fatalf("login: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	for _, path := range []string{"/ui", "/ui/hosts"} {
		if p := page(path, session); !strings.Contains(p, logout) || !strings.Contains(p, "Log out") {
			t.Errorf("%s, logged in: no Log out:\n%s", path, p)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/ui/logout", nil)
	req.AddCookie(session)
	if resp, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cleared := false
	for _, c := range resp.Cookies() {
		cleared = cleared || c.Name == session.Name && c.MaxAge < 0
	}
	if resp.StatusCode != http.StatusSeeOther || !cleared {
		t.Fatalf("logout: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	if p := page("/ui", nil); strings.Contains(p, "Log out") {
		t.Errorf("logged out, the page offers to log out")
	}

	// The legend: swatches in the heat map's colours, from an idle tree's
	// (0%) to a full one's (100%).
	hosts := page("/ui/hosts", nil)
	legend := regexp.MustCompile(`(?s)<figure [^>]*id="heat-legend".*?</figure>`).FindString(hosts)
	if legend == "" {
		t.Fatalf("no heat map legend:\n%s", hosts)
	}
	fills := regexp.MustCompile(`fill="(hsl\([0-9]+,70%,45%\))"`)
	var swatches []string
	for _, m := range fills.FindAllStringSubmatch(legend, -1) {
		swatches = append(swatches, m[1])
	}
	if len(swatches) < 3 || swatches[0] != "hsl(120,70%,45%)" || swatches[len(swatches)-1] != "hsl(0,70%,45%)" ||
		!strings.Contains(legend, ">0%<") || !strings.Contains(legend, ">100%<") {
		t.Errorf("legend %v:\n%s", swatches, legend)
	}
	cells := fills.FindAllString(hosts[strings.Index(hosts, `id="heatmap"`):], -1)
	if len(cells) == 0 {
		t.Errorf("the heat map's cells are not coloured on the legend's scale:\n%s", hosts)
	}
}
