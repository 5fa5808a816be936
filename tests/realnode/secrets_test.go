package realnode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
)

const (
	databaseContainer = desired.DatabaseContainerName
	// bootstrapMessage is what the instance program logs when it
	// initializes or clones an empty data directory.
	bootstrapMessage = "bootstrapping a new database"
)

// operatorLog keeps everything the in-process operator logs, at every
// level, for the test that searches it for secrets.
var operatorLog lockedBuffer

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// errorsTo passes on the operator's error lines only (all of them with
// DBPILOT_TEST_LOG=debug), so a test run's output stays readable.
type errorsTo struct{ w io.Writer }

func (e errorsTo) Write(p []byte) (int, error) {
	if os.Getenv("DBPILOT_TEST_LOG") == "debug" || bytes.Contains(p, []byte(`"level":"error"`)) {
		return e.w.Write(p)
	}
	return len(p), nil
}

func podIsReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podLog is a container's log.
func podLog(g Gomega, namespace, pod, container string) string {
	data, err := clientset.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container}).Do(context.Background()).Raw()
	g.Expect(err).NotTo(HaveOccurred())
	return string(data)
}

// secretValues are the values of keys in the Secret, none of them empty.
func secretValues(g Gomega, namespace, name string, keys []string) []string {
	secret, err := clientset.CoreV1().Secrets(namespace).Get(context.Background(), name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	var values []string
	for _, key := range keys {
		g.Expect(secret.Data[key]).NotTo(BeEmpty(), "%s key %s", name, key)
		values = append(values, string(secret.Data[key]))
	}
	return values
}

// expectNoInternalPasswords searches every container log of the Database's
// pods, the namespace's Events, the Database's status, the operator's log
// and its metrics for every secret value the Database's pods hold: the
// replication and monitoring passwords, the generated application and
// superuser passwords, and the namespace's metrics token; and for the
// former values given (passwords rotated away, those of users removed).
func expectNoInternalPasswords(g Gomega, db *dbpilotv1alpha1.Database, former ...string) {
	ctx := context.Background()
	secrets := slices.Clone(former)
	for name, keys := range map[string][]string{
		db.ReplicationSecretName():        {layout.KeyReplicationPassword, layout.KeyMonitoringPassword},
		db.CredentialsSecretName():        {layout.KeyPassword, layout.KeySuperuserPassword},
		dbpilotv1alpha1.MetricsSecretName: {layout.KeyMetricsToken},
	} {
		secrets = append(secrets, secretValues(g, db.Namespace, name, keys)...)
	}
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	var exposition strings.Builder
	for _, f := range families {
		_, err := expfmt.MetricFamilyToText(&exposition, f)
		g.Expect(err).NotTo(HaveOccurred())
	}
	places := map[string]string{"operator log": operatorLog.String(), "operator metrics": exposition.String()}
	pods, err := clientset.CoreV1().Pods(db.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.FormatLabels(db.SelectorLabels())})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pods.Items).NotTo(BeEmpty())
	for _, pod := range pods.Items {
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			places["log of "+pod.Name+"/"+c.Name] = podLog(g, db.Namespace, pod.Name, c.Name)
		}
	}
	g.Expect(places["log of "+db.PodName(0)+"/"+databaseContainer]).NotTo(BeEmpty(), "the first pod's log is read")
	if len(pods.Items) > 1 {
		g.Expect(places["log of "+db.PodName(1)+"/"+databaseContainer]).NotTo(BeEmpty(), "the second pod's log is read")
	}
	events, err := clientset.CoreV1().Events(db.Namespace).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	eventsJSON, err := json.Marshal(events)
	g.Expect(err).NotTo(HaveOccurred())
	places["Events"] = string(eventsJSON)
	statusJSON, err := json.Marshal(db.Status)
	g.Expect(err).NotTo(HaveOccurred())
	places["status"] = string(statusJSON)
	for where, text := range places {
		for _, s := range secrets {
			g.Expect(bytes.Contains([]byte(text), []byte(s))).To(BeFalse(), "an internal password appears in the %s", where)
		}
	}
}

// logPodsOnFailure registers a cleanup that, when the test failed, logs the
// Database's conditions and instances, its namespace's Events, and the last
// lines of the database container of each pod of the Database, this run's
// and the previous one's: the instance programs tell what they did.
func logPodsOnFailure(t *testing.T, db *dbpilotv1alpha1.Database) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		now := &dbpilotv1alpha1.Database{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(db), now); err == nil {
			t.Logf("%s: conditions %+v\ninstances %+v", db.Name, now.Status.Conditions, now.Status.Instances)
		}
		t.Logf("events of %s:\n%s", db.Namespace, eventNotes(db.Namespace))
		pods, err := clientset.CoreV1().Pods(db.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.FormatLabels(db.SelectorLabels())})
		if err != nil {
			return
		}
		tail := int64(40)
		for _, pod := range pods.Items {
			for _, previous := range []bool{true, false} {
				data, err := clientset.CoreV1().Pods(db.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{
					Container: databaseContainer, Previous: previous, TailLines: &tail}).Do(ctx).Raw()
				if err == nil {
					t.Logf("%s (previous: %v):\n%s", pod.Name, previous, data)
				}
			}
		}
	})
}
