package wire

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Placement's error bodies are made by webob (webob.exc.WSGIHTTPException):
// the exception's body template, filled with its explanation, its detail
// and (for a few statuses) request variables, then put in one of three
// layouts chosen by the Accept header: an HTML page (the template's
// values HTML-escaped, tags and newlines kept), plain text or JSON (both
// unescaped, then strip_tags: every newline becomes a space, "<br />" a
// newline, other tags and comment markers go). Clients depend on the
// result's layout: osc-placement, for one, prints only the last line of
// a JSON detail, so the whole message must be on one line.

// webobClass is what one of webob.exc's exception classes contributes
// to an error body: its title, its explanation (webob folds each to one
// line when it is imported) and its body template.
type webobClass struct {
	title, explanation string
	// template, when not empty, replaces webobTemplate. Such a template
	// may name request variables (webobEnv).
	template string
}

// webobTemplate is WSGIHTTPException.body_template_obj, the template of
// every status without one of its own.
const webobTemplate = "${explanation}<br /><br />\n${detail}\n${html_comment}\n"

// webobClasses are webob.exc's error classes by status (its status_map);
// statuses webob has no class for have an empty explanation and Go's
// status text as title.
var webobClasses = map[int]webobClass{
	400: {title: "Bad Request", explanation: webobClientError},
	401: {title: "Unauthorized", explanation: "This server could not verify that you are authorized to access the document you requested. Either you supplied the wrong credentials (e.g., bad password), or your browser does not understand how to supply the credentials required."},
	402: {title: "Payment Required", explanation: "Access was denied for financial reasons."},
	403: {title: "Forbidden", explanation: "Access was denied to this resource."},
	404: {title: "Not Found", explanation: "The resource could not be found."},
	405: {title: "Method Not Allowed", explanation: webobClientError,
		template: "The method ${REQUEST_METHOD} is not allowed for this resource. <br /><br />\n${detail}"},
	// webob's template really leaves the parenthesis open.
	406: {title: "Not Acceptable", explanation: webobClientError,
		template: "The resource could not be generated that was acceptable to your browser\n(content of type ${HTTP_ACCEPT}. <br /><br />\n${detail}"},
	407: {title: "Proxy Authentication Required", explanation: "Authentication with a local proxy is needed."},
	408: {title: "Request Timeout", explanation: "The server has waited too long for the request to be sent by the client."},
	409: {title: "Conflict", explanation: "There was a conflict when trying to complete your request."},
	410: {title: "Gone", explanation: "This resource is no longer available. No forwarding address is given."},
	411: {title: "Length Required", explanation: "Content-Length header required."},
	412: {title: "Precondition Failed", explanation: "Request precondition failed."},
	413: {title: "Request Entity Too Large", explanation: "The body of your request was too large for this server."},
	414: {title: "Request-URI Too Long", explanation: "The request URI was too long for this server."},
	415: {title: "Unsupported Media Type", explanation: webobClientError,
		template: "The request media type ${CONTENT_TYPE} is not supported by this server.\n<br /><br />\n${detail}"},
	416: {title: "Request Range Not Satisfiable", explanation: "The Range requested is not available."},
	417: {title: "Expectation Failed", explanation: "Expectation failed."},
	422: {title: "Unprocessable Entity", explanation: "Unable to process the contained instructions"},
	423: {title: "Locked", explanation: "The resource is locked"},
	424: {title: "Failed Dependency", explanation: "The method could not be performed because the requested action dependended on another action and that action failed"},
	428: {title: "Precondition Required", explanation: "This request is required to be conditional"},
	429: {title: "Too Many Requests", explanation: "The client has sent too many requests in a given amount of time"},
	431: {title: "Request Header Fields Too Large", explanation: "The request header fields were too large"},
	451: {title: "Unavailable For Legal Reasons", explanation: "The resource is not available due to legal reasons."},
	500: {title: "Internal Server Error", explanation: webobServerError},
	501: {title: "Not Implemented", explanation: webobServerError,
		template: "\nThe request method ${REQUEST_METHOD} is not implemented for this server. <br /><br />\n${detail}"},
	502: {title: "Bad Gateway", explanation: "Bad gateway."},
	503: {title: "Service Unavailable", explanation: "The server is currently unavailable. Please try again at a later time."},
	504: {title: "Gateway Timeout", explanation: "The gateway has timed out."},
	505: {title: "HTTP Version Not Supported", explanation: "The HTTP version is not supported."},
	507: {title: "Insufficient Storage", explanation: "There was not enough space to save the resource"},
	511: {title: "Network Authentication Required", explanation: "Network authentication is required"},
}

// The explanations of HTTPClientError and HTTPServerError, which their
// subclasses without one of their own inherit.
const (
	webobClientError = "The server could not comply with the request since it is either malformed or otherwise incorrect."
	webobServerError = "The server has either erred or is incapable of performing the requested operation."
)

// webobClassOf is the class webob raises for status.
func webobClassOf(status int) webobClass {
	if c, ok := webobClasses[status]; ok {
		return c
	}
	return webobClass{title: http.StatusText(status)}
}

// webobError is one error as webob renders it: the exception (status and
// detail; Placement never leaves a comment, its wrapper moves it into the
// error code) and the request variables a status's own template names.
type webobError struct {
	status int
	detail string
	env    webobEnv
}

// webobEnv are the WSGI environment variables webob's templates name.
type webobEnv struct {
	// Method is REQUEST_METHOD.
	Method string
	// Accept is HTTP_ACCEPT as Placement's request log middleware leaves
	// it: application/json when the request has none or "*/*".
	Accept string
	// ContentType is CONTENT_TYPE; Placement's content check sets it to
	// "None" when the request's is empty before it raises its 415.
	ContentType string
}

// webobEnvOf is r's webobEnv.
func webobEnvOf(r *http.Request) webobEnv {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		ct = "None"
	}
	return webobEnv{Method: r.Method, Accept: AcceptHeader(r), ContentType: ct}
}

// statusLine is webob's status line: code and title.
func (w webobError) statusLine() string {
	return strconv.Itoa(w.status) + " " + webobClassOf(w.status).title
}

// body is WSGIHTTPException._make_body: the class's template with its
// values passed through escape. Values a template does not know are left
// as they are, as string.Template.safe_substitute does.
func (w webobError) body(escape func(string) string) string {
	class := webobClassOf(w.status)
	tmpl := webobTemplate
	if class.template != "" {
		tmpl = class.template
	}
	var b strings.Builder
	b.Grow(len(tmpl) + len(class.explanation) + len(w.detail) + len(w.env.Accept) + len(w.env.ContentType) + len(w.env.Method))
	for {
		i := strings.Index(tmpl, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			break
		}
		b.WriteString(tmpl[:i])
		if v, ok := w.arg(class, tmpl[i+2:i+j]); ok {
			b.WriteString(escape(v))
		} else {
			b.WriteString(tmpl[i : i+j+1])
		}
		tmpl = tmpl[i+j+1:]
	}
	b.WriteString(tmpl)
	return b.String()
}

// arg is the value, unescaped, of the template variable name in the body
// of class: the explanation, the detail, the empty comments and, for a
// class with a template of its own, the environment.
func (w webobError) arg(class webobClass, name string) (string, bool) {
	switch name {
	case "explanation":
		return class.explanation, true
	case "detail":
		return w.detail, true
	case "comment", "html_comment":
		return "", true
	}
	if class.template == "" {
		return "", false
	}
	switch name {
	case "REQUEST_METHOD":
		return w.env.Method, true
	case "HTTP_ACCEPT":
		return w.env.Accept, true
	case "CONTENT_TYPE":
		return w.env.ContentType, true
	}
	return "", false
}

// html is webob's HTML page (html_body): the body with its values
// HTML-escaped inside html_template_obj.
func (w webobError) html() string {
	s := w.statusLine()
	return "<html>\n <head>\n  <title>" + s + "</title>\n </head>\n <body>\n  <h1>" + s + "</h1>\n  " +
		w.body(pyHTMLEscape) + "\n </body>\n</html>"
}

// plain is webob's plain text (plain_body): the status line, an empty
// line, and the unescaped body through strip_tags.
func (w webobError) plain() string {
	return w.statusLine() + "\n\n" + webobStripTags(w.body(noEscape))
}

// message is the unescaped body, the "message" of webob's own JSON.
func (w webobError) message() string { return w.body(noEscape) }

// detailText is the "detail" of Placement's JSON error formatter
// (util.json_error_formatter): the unescaped body through strip_tags.
func (w webobError) detailText() string { return webobStripTags(w.body(noEscape)) }

func noEscape(s string) string { return s }

// pyHTMLEscape is webob.util.html_escape: Python's html.escape with
// quotes, then every non-ASCII character as a decimal character
// reference (encode("ascii", "xmlcharrefreplace")).
func pyHTMLEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case r == '\'':
			b.WriteString("&#x27;")
		case r >= 0x80:
			fmt.Fprintf(&b, "&#%d;", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// webobStripTags is webob.exc.strip_tags: every newline a space, every
// carriage return dropped, then (as its regular expressions replace,
// leftmost first) each "<br" (any case) up to the next ">" a newline,
// each "<!--" and "-->" dropped, and each "<" up to the next ">" dropped.
func webobStripTags(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "\r", "")
	s = replaceBr(s)
	s = dropComments(s)
	return dropTags(s)
}

// replaceBr replaces each "<br" (any case), up to the first ">" after
// it, with a newline: the expression (?is)<br.*?>.
func replaceBr(s string) string {
	return replaceToGT(s, "\n", func(s string, i int) int {
		if i+3 <= len(s) && s[i] == '<' && s[i+1]|0x20 == 'b' && s[i+2]|0x20 == 'r' {
			return 3
		}
		return 0
	})
}

// dropComments drops each "<!--" and "-->", leftmost first: the
// expression <!--|-->.
func dropComments(s string) string {
	var b strings.Builder
	done := 0
	for i := 0; i < len(s); i++ {
		n := 0
		switch {
		case strings.HasPrefix(s[i:], "<!--"):
			n = 4
		case strings.HasPrefix(s[i:], "-->"):
			n = 3
		default:
			continue
		}
		b.WriteString(s[done:i])
		done = i + n
		i = done - 1
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// dropTags drops each "<" up to the first ">" after it: the expression
// (?s)<.*?>.
func dropTags(s string) string {
	return replaceToGT(s, "", func(s string, i int) int {
		if s[i] == '<' {
			return 1
		}
		return 0
	})
}

// replaceToGT replaces with with, leftmost first, each match in s of an
// opening (open(s, i) is its length at i, 0 for none) up to the first
// ">" after it; an opening with no ">" after it, and anything after
// that, is left as it is. s itself when nothing matched.
func replaceToGT(s, with string, open func(s string, i int) int) string {
	var b strings.Builder
	done := 0 // s[:done] is in b
	for i := 0; i < len(s); i++ {
		n := open(s, i)
		if n == 0 {
			continue
		}
		k := strings.IndexByte(s[i+n:], '>')
		if k < 0 {
			break
		}
		if done == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[done:i])
		b.WriteString(with)
		done = i + n + k + 1
		i = done - 1
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}
