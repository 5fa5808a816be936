package scale_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"
)

// auditEvent is the part of a kube-apiserver audit event the benchmark
// reads.
type auditEvent struct {
	Stage                    string    `json:"stage"`
	Verb                     string    `json:"verb"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	User                     struct {
		Username string `json:"username"`
	} `json:"user"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
}

// target is "resource" or "resource/subresource", empty for requests to
// no object (discovery).
func (e auditEvent) target() string {
	if e.ObjectRef == nil {
		return ""
	}
	if e.ObjectRef.Subresource != "" {
		return e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
	}
	return e.ObjectRef.Resource
}

// throttled counts the requests the API server answered with 429.
const throttled = "throttled"

// writeVerbs are the verbs that change the cluster.
var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// requestCounts are one user's requests by verb, each request counted once.
type requestCounts map[string]int

// writes sums the write verbs.
func (c requestCounts) writes() int {
	total := 0
	for verb, n := range c {
		if writeVerbs[verb] {
			total += n
		}
	}
	return total
}

// total sums every verb.
func (c requestCounts) total() int {
	total := 0
	for _, n := range c {
		total += n
	}
	return total
}

// String lists the verbs in order: "create=3 get=1".
func (c requestCounts) String() string {
	verbs := make([]string, 0, len(c))
	for verb := range c {
		verbs = append(verbs, verb)
	}
	sort.Strings(verbs)
	parts := make([]string, len(verbs))
	for i, verb := range verbs {
		parts[i] = fmt.Sprintf("%s=%d", verb, c[verb])
	}
	return strings.Join(parts, " ")
}

// countRequests reads the audit log and counts user's requests received in
// [from, to) by verb, and by verb and resource. A watch is counted when its
// response starts, every other request when it completes.
func countRequests(path, user string, from, to time.Time) (byVerb, byTarget requestCounts, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("opening audit log: %w", err)
	}
	defer f.Close()
	byVerb, byTarget = requestCounts{}, requestCounts{}
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		var e auditEvent
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			return nil, nil, fmt.Errorf("audit log line: %w", err)
		}
		if e.User.Username != user || e.RequestReceivedTimestamp.Before(from) || !e.RequestReceivedTimestamp.Before(to) {
			continue
		}
		counted := "ResponseComplete"
		if e.Verb == "watch" {
			counted = "ResponseStarted"
		}
		switch {
		case e.Stage != counted:
		case e.ResponseStatus != nil && e.ResponseStatus.Code == http.StatusTooManyRequests:
			// Turned away by the API server's priority and fairness, and
			// retried by the client: counted apart.
			byVerb[throttled]++
		default:
			byVerb[e.Verb]++
			byTarget[strings.TrimSuffix(e.Verb+":"+e.target(), ":")]++
		}
	}
	return byVerb, byTarget, scanner.Err()
}
