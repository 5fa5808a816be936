package scale_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/dbpilot/dbpilot/internal/localcluster"
)

// managerRole reads the operator's two ClusterRoles, as generated from the
// RBAC markers into config/rbac/role.yaml (namespaced kinds) and
// config/rbac/cluster_role.yaml (cluster-scoped kinds), into one: `make
// deploy` binds both cluster-wide.
func managerRole() (*rbacv1.ClusterRole, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "dbpilot-scale-manager"}}
	for _, file := range []string{"role.yaml", "cluster_role.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, "config", "rbac", file))
		if err != nil {
			return nil, err
		}
		generated := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict(data, generated); err != nil {
			return nil, fmt.Errorf("config/rbac/%s: %w", file, err)
		}
		role.Rules = append(role.Rules, generated.Rules...)
	}
	return role, nil
}

// boundAccount creates a ServiceAccount of the bench namespace bound to the
// operator's ClusterRole and returns a client configuration with a token of
// it: the operator and the raw client are allowed exactly the same.
func boundAccount(ctx context.Context, account string) (*rest.Config, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}
	if _, err := clientset.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	role, err := managerRole()
	if err != nil {
		return nil, err
	}
	if _, err := clientset.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account, Namespace: benchNamespace}}
	if _, err := clientset.CoreV1().ServiceAccounts(benchNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "dbpilot-scale-" + account},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: benchNamespace}},
	}
	if _, err := clientset.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	token, err := clientset.CoreV1().ServiceAccounts(benchNamespace).CreateToken(ctx, account, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](4 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for %s: %w", account, err)
	}
	return &rest.Config{
		Host:            restConfig.Host,
		BearerToken:     token.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: restConfig.CAFile},
	}, nil
}

// writeKubeconfig writes a kubeconfig file for cfg (token and CA file).
func writeKubeconfig(path string, cfg *rest.Config) error {
	config := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"scale": {Server: cfg.Host, CertificateAuthority: cfg.CAFile}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"scale": {Token: cfg.BearerToken}},
		Contexts:       map[string]*clientcmdapi.Context{"scale": {Cluster: "scale", AuthInfo: "scale"}},
		CurrentContext: "scale",
	}
	return clientcmd.WriteToFile(config, path)
}
