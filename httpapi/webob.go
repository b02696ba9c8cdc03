package httpapi

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/berthd/berth/internal/jsonschema"
)

// Placement's error bodies are made by webob: an HTML template around the
// explanation and the message, then strip_tags (every newline becomes a
// space, "<br />" a newline, other tags and comment markers go). Clients
// depend on the result's layout: osc-placement, for one, prints only the
// last line of a detail, so the whole message must be on one line.

var (
	webobBr      = regexp.MustCompile(`(?is)<br.*?>`)
	webobComment = regexp.MustCompile(`<!--|-->`)
	webobTag     = regexp.MustCompile(`(?s)<.*?>`)
)

// webobStripTags is webob.exc.strip_tags.
func webobStripTags(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "\r", "")
	s = webobBr.ReplaceAllString(s, "\n")
	s = webobComment.ReplaceAllString(s, "")
	return webobTag.ReplaceAllString(s, "")
}

// webobDetail lays out the detail of an error with status and message msg
// as Placement does. Most statuses use webob's default template
// ("${explanation}<br /><br />\n${detail}\n${html_comment}\n"); 405, 406
// and 415 have templates of their own that name the request's method,
// Accept or Content-Type header and end right after the message (empty
// for a 405 that a versioned handler raises with no detail).
func webobDetail(status int, r *http.Request, msg string) string {
	var tmpl string
	switch status {
	case http.StatusMethodNotAllowed:
		tmpl = fmt.Sprintf("The method %s is not allowed for this resource. <br /><br />\n%s", r.Method, msg)
	case http.StatusNotAcceptable:
		// webob's template really leaves the parenthesis open.
		tmpl = fmt.Sprintf("The resource could not be generated that was acceptable to your browser\n(content of type %s. <br /><br />\n%s", r.Header.Get("Accept"), msg)
	case http.StatusUnsupportedMediaType:
		ct := r.Header.Get("Content-Type")
		if ct == "" {
			ct = "None"
		}
		tmpl = fmt.Sprintf("The request media type %s is not supported by this server.\n<br /><br />\n%s", ct, msg)
	default:
		tmpl = explanations[status] + "<br /><br />\n" + msg + "\n\n"
	}
	return webobStripTags(tmpl)
}

// parsePyVersion parses "X.Y" as microversion_parse does, with Python's
// int() on each side of the first dot, and words a failure as Python does.
func parsePyVersion(v string) (major, minor int, err error) {
	left, right, ok := strings.Cut(v, ".")
	if major, err = pyInt(left); err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, 0, fmt.Errorf("Version.__new__() missing 1 required positional argument: 'minor'")
	}
	if minor, err = pyInt(right); err != nil {
		return 0, 0, err
	}
	return major, minor, nil
}

// pyInt is Python's int(s) for the ASCII forms a header can carry:
// surrounding whitespace, a sign, digits with single underscores between.
func pyInt(s string) (int, error) {
	bad := fmt.Errorf("invalid literal for int() with base 10: %s", jsonschema.PyRepr(s))
	t := strings.TrimSpace(s)
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg, t = t[0] == '-', t[1:]
	}
	if t == "" || t[0] == '_' || t[len(t)-1] == '_' || strings.Contains(t, "__") {
		return 0, bad
	}
	n := 0
	for _, r := range t {
		if r == '_' {
			continue
		}
		if r < '0' || r > '9' || n > 1e8 {
			return 0, bad
		}
		n = n*10 + int(r-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}
