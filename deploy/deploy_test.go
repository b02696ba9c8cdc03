package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// obj is one parsed Kubernetes object (or any YAML mapping).
type obj map[string]any

// get walks a path of map keys and list indexes ("spec.template.0").
func (o obj) get(path string) any {
	var cur any = map[string]any(o)
	for _, key := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[key]
		case []any:
			var i int
			if _, err := fmt.Sscan(key, &i); err != nil || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

func (o obj) str(path string) string { s, _ := o.get(path).(string); return s }
func (o obj) int(path string) int    { n, _ := o.get(path).(int); return n }
func (o obj) list(path string) []any { l, _ := o.get(path).([]any); return l }
func (o obj) mapAt(path string) obj  { m, _ := o.get(path).(map[string]any); return obj(m) }

// readYAML parses every document of a YAML file.
func readYAML(t *testing.T, path string) []obj {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []obj
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

// manifests reads the kustomization and the objects of the files it
// lists, by kind.
func manifests(t *testing.T) (kust obj, byKind map[string][]obj) {
	t.Helper()
	dir := "kubernetes"
	kusts := readYAML(t, filepath.Join(dir, "kustomization.yaml"))
	if len(kusts) != 1 {
		t.Fatalf("kustomization.yaml: %d documents", len(kusts))
	}
	kust = kusts[0]
	listed := map[string]bool{}
	byKind = map[string][]obj{}
	for _, r := range kust.list("resources") {
		name, _ := r.(string)
		listed[name] = true
		for _, o := range readYAML(t, filepath.Join(dir, name)) {
			if o.str("apiVersion") == "" || o.str("kind") == "" || o.str("metadata.name") == "" {
				t.Errorf("%s: object without apiVersion, kind or metadata.name: %v", name, o)
			}
			byKind[o.str("kind")] = append(byKind[o.str("kind")], o)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" && !listed[base] {
			t.Errorf("%s is not in the kustomization's resources", base)
		}
	}
	return kust, byKind
}

func one(t *testing.T, byKind map[string][]obj, kind string) obj {
	t.Helper()
	if len(byKind[kind]) != 1 {
		t.Fatalf("want one %s, have %d", kind, len(byKind[kind]))
	}
	return byKind[kind][0]
}

// berthEnv is every BERTH_* variable berthd reads, from its flag table.
func berthEnv(t *testing.T) map[string]bool {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "cmd", "berthd", "flags.go"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, m := range regexp.MustCompile(`"(BERTH_[A-Z0-9_]+)"`).FindAllStringSubmatch(string(src), -1) {
		known[m[1]] = true
	}
	if len(known) < 10 {
		t.Fatalf("found only %d BERTH_ variables in cmd/berthd/flags.go", len(known))
	}
	return known
}

// matches reports whether every selector label is among labels.
func matches(selector, labels obj) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestKubernetesManifests(t *testing.T) {
	_, byKind := manifests(t)
	known := berthEnv(t)
	dep := one(t, byKind, "Deployment")
	podLabels := dep.mapAt("spec.template.metadata.labels")
	if n := dep.int("spec.replicas"); n != 3 {
		t.Errorf("Deployment replicas %d, want 3", n)
	}
	if !matches(dep.mapAt("spec.selector.matchLabels"), podLabels) {
		t.Error("Deployment selector does not match its pod labels")
	}
	ctr := dep.mapAt("spec.template.spec.containers.0")
	ports := map[string]bool{}
	for _, p := range ctr.list("ports") {
		ports[obj(p.(map[string]any)).str("name")] = true
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz", "startupProbe": "/healthz"} {
		if got := ctr.str(probe + ".httpGet.path"); got != path {
			t.Errorf("%s path %q, want %s", probe, got, path)
		}
		if port := ctr.str(probe + ".httpGet.port"); !ports[port] {
			t.Errorf("%s port %q is not a container port", probe, port)
		}
	}
	if ctr.get("resources.requests.cpu") == nil || ctr.get("resources.requests.memory") == nil {
		t.Error("berthd container has no cpu and memory requests")
	}
	checkHardened(t, "Deployment", dep.mapAt("spec.template.spec"), ctr)

	// Service and PodDisruptionBudget select the pods; ports exist.
	svc := one(t, byKind, "Service")
	if !matches(svc.mapAt("spec.selector"), podLabels) {
		t.Error("Service selector does not match the pods")
	}
	for _, p := range svc.list("spec.ports") {
		if tp := obj(p.(map[string]any)).str("targetPort"); !ports[tp] {
			t.Errorf("Service targetPort %q is not a container port", tp)
		}
	}
	pdb := one(t, byKind, "PodDisruptionBudget")
	if !matches(pdb.mapAt("spec.selector.matchLabels"), podLabels) {
		t.Error("PodDisruptionBudget selector does not match the pods")
	}
	if n := pdb.int("spec.minAvailable"); n < 1 || n >= dep.int("spec.replicas") {
		t.Errorf("PodDisruptionBudget minAvailable %d: want at least 1 and fewer than the replicas", n)
	}

	// Configuration: known variables, migrations left to the Job, and a
	// shutdown that fits the pod's grace period and outlasts readiness.
	cm := one(t, byKind, "ConfigMap")
	if name := ctr.str("envFrom.0.configMapRef.name"); name != cm.str("metadata.name") {
		t.Errorf("berthd reads ConfigMap %q, the manifest defines %q", name, cm.str("metadata.name"))
	}
	data := cm.mapAt("data")
	for k := range data {
		if strings.HasPrefix(k, "BERTH_") && !known[k] {
			t.Errorf("ConfigMap sets %s, which berthd does not read", k)
		}
		if !strings.HasPrefix(k, "BERTH_") && !strings.HasPrefix(k, "OTEL_") {
			t.Errorf("ConfigMap key %s is neither BERTH_* nor OTEL_*", k)
		}
	}
	if data["BERTH_MIGRATE_ON_START"] != "false" {
		t.Error("replicas migrate on start; the Job should")
	}
	cmEnv := map[string]string{}
	for k, v := range data {
		cmEnv[k] = fmt.Sprint(v)
	}
	checkRealAuth(t, "ConfigMap", cmEnv)
	delay, grace := duration(t, data["BERTH_SHUTDOWN_DELAY"]), duration(t, data["BERTH_SHUTDOWN_GRACE"])
	if term := time.Duration(dep.int("spec.template.spec.terminationGracePeriodSeconds")) * time.Second; delay+grace >= term {
		t.Errorf("shutdown delay %v + grace %v does not fit terminationGracePeriodSeconds %v", delay, grace, term)
	}
	unready := time.Duration(ctr.int("readinessProbe.periodSeconds")*ctr.int("readinessProbe.failureThreshold")) * time.Second
	if unready >= delay {
		t.Errorf("the readiness probe needs %v to fail, longer than the shutdown delay %v", unready, delay)
	}
	if tf, _ := data["BERTH_TOKEN_FILE"].(string); tf != "" {
		mounted := false
		for _, m := range ctr.list("volumeMounts") {
			if strings.HasPrefix(tf, obj(m.(map[string]any)).str("mountPath")+"/") {
				mounted = true
			}
		}
		if !mounted {
			t.Errorf("token file %s is on no volume mount", tf)
		}
	}

	// The database URL comes from the CloudNativePG cluster's app Secret,
	// in the Deployment and in the migration Job alike.
	pg := one(t, byKind, "Cluster")
	if pg.str("apiVersion") != "postgresql.cnpg.io/v1" || pg.int("spec.instances") < 3 {
		t.Errorf("PostgreSQL Cluster %s with %d instances, want postgresql.cnpg.io/v1 with a primary and two replicas",
			pg.str("apiVersion"), pg.int("spec.instances"))
	}
	appSecret := pg.str("metadata.name") + "-app"
	job := one(t, byKind, "Job")
	jobCtr := job.mapAt("spec.template.spec.containers.0")
	for what, c := range map[string]obj{"Deployment": ctr, "Job": jobCtr} {
		found := false
		for _, e := range c.list("env") {
			e := obj(e.(map[string]any))
			if strings.HasPrefix(e.str("name"), "BERTH_") && !known[e.str("name")] {
				t.Errorf("%s sets %s, which berthd does not read", what, e.str("name"))
			}
			if e.str("name") == "BERTH_DATABASE_URL" {
				found = e.str("valueFrom.secretKeyRef.name") == appSecret && e.str("valueFrom.secretKeyRef.key") == "uri"
			}
		}
		if !found {
			t.Errorf("%s does not take BERTH_DATABASE_URL from Secret %s key uri", what, appSecret)
		}
	}
	if args := jobCtr.list("args"); len(args) != 1 || args[0] != "migrate" {
		t.Errorf("migration Job args %v, want [migrate]", args)
	}
	if jobCtr.str("image") != ctr.str("image") {
		t.Errorf("Job image %q differs from the Deployment's %q", jobCtr.str("image"), ctr.str("image"))
	}
	if rp := job.str("spec.template.spec.restartPolicy"); rp != "OnFailure" && rp != "Never" {
		t.Errorf("Job restartPolicy %q", rp)
	}
	checkHardened(t, "Job", job.mapAt("spec.template.spec"), jobCtr)
}

// checkHardened checks that a pod runs its container as non-root on a
// read-only root filesystem without capabilities or privilege escalation.
func checkHardened(t *testing.T, what string, pod, ctr obj) {
	t.Helper()
	if pod.get("securityContext.runAsNonRoot") != true {
		t.Errorf("%s: pod not runAsNonRoot", what)
	}
	if uid := pod.int("securityContext.runAsUser"); uid == 0 {
		t.Errorf("%s: runAsUser %d", what, uid)
	}
	if ctr.get("securityContext.allowPrivilegeEscalation") != false ||
		ctr.get("securityContext.readOnlyRootFilesystem") != true ||
		!slices.Contains(ctr.list("securityContext.capabilities.drop"), any("ALL")) {
		t.Errorf("%s: container security context not hardened: %v", what, ctr.get("securityContext"))
	}
}

func duration(t *testing.T, v any) time.Duration {
	t.Helper()
	s, _ := v.(string)
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return d
}

// dockerfile is the parsed Dockerfile: its instructions, continuation
// lines joined, comments dropped.
type instruction struct{ cmd, args string }

func readDockerfile(t *testing.T) []instruction {
	t.Helper()
	f, err := os.Open("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		cont := strings.HasSuffix(line, "\\")
		cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
		if cont {
			continue
		}
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.Join(strings.Fields(args), " ")})
		cur.Reset()
	}
	return out
}

func TestDockerfile(t *testing.T) {
	var stages [][]instruction
	for _, in := range readDockerfile(t) {
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			t.Fatalf("%s before FROM", in.cmd)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a build stage and a runtime stage", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	staticBuild := false
	for _, in := range build {
		if in.cmd == "RUN" && strings.Contains(in.args, "CGO_ENABLED=0") && strings.Contains(in.args, "go build") &&
			strings.Contains(in.args, "./cmd/berthd") {
			staticBuild = true
		}
	}
	if !staticBuild {
		t.Error("the build stage has no RUN CGO_ENABLED=0 go build ... ./cmd/berthd")
	}
	base := final[0].args
	if !strings.HasPrefix(base, "gcr.io/distroless/static") && base != "scratch" {
		t.Errorf("runtime base %q: want distroless static or scratch", base)
	}
	var user, entry, copied string
	env := map[string]string{}
	for _, in := range final {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entry = in.args
		case "COPY":
			f := strings.Fields(in.args)
			copied = f[len(f)-1]
		case "ENV":
			for _, kv := range strings.Fields(in.args) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
		case "RUN":
			t.Errorf("RUN in the runtime stage (it has no shell): %s", in.args)
		}
	}
	if uid, _, _ := strings.Cut(user, ":"); uid == "" || uid == "0" || uid == "root" {
		t.Errorf("runtime USER %q: want a non-root user", user)
	}
	if !strings.Contains(entry, `"`+copied+`"`) {
		t.Errorf("ENTRYPOINT %s does not run the copied binary %s", entry, copied)
	}
	known := berthEnv(t)
	for k := range env {
		if !known[k] {
			t.Errorf("ENV %s: berthd does not read it", k)
		}
	}
	if !strings.HasPrefix(env["BERTH_LISTEN"], "0.0.0.0:") {
		t.Errorf("BERTH_LISTEN %q: a container must listen beyond loopback", env["BERTH_LISTEN"])
	}
	checkRealAuth(t, "Dockerfile", env)
}

// checkRealAuth fails unless env, the settings of a deployment that
// listens beyond loopback, selects real authentication: noauth2 (also
// berthd's default when BERTH_AUTH is unset) lets anyone be admin.
func checkRealAuth(t *testing.T, where string, env map[string]string) {
	t.Helper()
	switch auth := env["BERTH_AUTH"]; auth {
	case "", "noauth2":
		t.Errorf("%s: BERTH_AUTH %q; a deployment beyond loopback needs real authentication", where, auth)
	case "tokens":
		if env["BERTH_TOKEN_FILE"] == "" {
			t.Errorf("%s: BERTH_AUTH tokens without BERTH_TOKEN_FILE", where)
		}
	}
	if v := env["BERTH_INSECURE_ALLOW_NOAUTH_ON_NETWORK"]; v != "" && v != "false" && v != "0" {
		t.Errorf("%s: BERTH_INSECURE_ALLOW_NOAUTH_ON_NETWORK=%s", where, v)
	}
}

// TestDocsDockerRunHasAuth: every `docker run` command in the docs' code
// blocks gives the container its token file (the image selects --auth
// tokens).
func TestDocsDockerRunHasAuth(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "README.md"))
	runs := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		inCode := false
		for i, line := range lines {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inCode = !inCode
			}
			if !inCode || !strings.HasPrefix(strings.TrimSpace(line), "docker run") {
				continue
			}
			cmd := line
			for j := i; strings.HasSuffix(strings.TrimSpace(lines[j]), "\\") && j+1 < len(lines); j++ {
				cmd += "\n" + lines[j+1]
			}
			runs++
			if !strings.Contains(cmd, "/etc/berth/tokens") || strings.Contains(cmd, "noauth2") {
				t.Errorf("%s:%d: docker run without a token file mounted at /etc/berth/tokens:\n%s", f, i+1, cmd)
			}
		}
	}
	if runs == 0 {
		t.Error("no docker run example found in the docs")
	}
}

// readUnit parses a systemd unit into section -> key -> values.
func readUnit(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not key=value in a section: %q", path, n, line)
			}
			out[section][k] = append(out[section][k], v)
		}
	}
	return out
}

func TestSystemdUnit(t *testing.T) {
	unit := readUnit(t, filepath.Join("systemd", "berthd.service"))
	svc := unit["Service"]
	if svc == nil || unit["Unit"] == nil || unit["Install"] == nil {
		t.Fatalf("sections %v", unit)
	}
	if start := svc["ExecStart"]; len(start) != 1 || !strings.HasSuffix(start[0], "berthd serve") {
		t.Errorf("ExecStart %v", start)
	}
	want := map[string]string{
		"DynamicUser": "yes", "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
		"PrivateTmp": "yes", "PrivateDevices": "yes", "RestrictSUIDSGID": "yes", "CapabilityBoundingSet": "",
		"KillSignal": "SIGTERM", "Restart": "on-failure",
	}
	for k, v := range want {
		if got := svc[k]; len(got) == 0 || got[len(got)-1] != v {
			t.Errorf("%s = %v, want %q", k, got, v)
		}
	}
	stop, err := time.ParseDuration(svc["TimeoutStopSec"][0])
	if err != nil {
		t.Fatal(err)
	}

	// The environment file sets only variables berthd reads, and the
	// shutdown fits TimeoutStopSec.
	known := berthEnv(t)
	f, err := os.ReadFile(filepath.Join("systemd", "berthd.env"))
	if err != nil {
		t.Fatal(err)
	}
	var grace time.Duration = 10 * time.Second // the default
	fileEnv := map[string]string{}
	for _, line := range strings.Split(string(f), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		fileEnv[k] = v
		if strings.HasPrefix(k, "BERTH_") && !known[k] {
			t.Errorf("berthd.env sets %s, which berthd does not read", k)
		}
		if k == "BERTH_SHUTDOWN_GRACE" {
			grace = duration(t, v)
		}
		if k == "BERTH_TOKEN_FILE" && !strings.HasPrefix(v, "/run/credentials/berthd.service/") {
			t.Errorf("BERTH_TOKEN_FILE %s: the dynamic user can read only the credential copy", v)
		}
	}
	if grace >= stop {
		t.Errorf("shutdown grace %v does not fit TimeoutStopSec %v", grace, stop)
	}
	checkRealAuth(t, "berthd.env", fileEnv)
	for _, e := range svc["Environment"] {
		if k, _, _ := strings.Cut(e, "="); strings.HasPrefix(k, "BERTH_") && !known[k] {
			t.Errorf("Environment %s: berthd does not read it", k)
		}
	}
}
