package localcluster

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v10/controller"
)

const (
	// ProvisionerName is the provisioner of the default StorageClass.
	ProvisionerName = "dbpilot.io/local-hostpath"
	// StorageClassName is the default StorageClass, which allows expansion.
	StorageClassName = "standard"

	defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"
)

// volumeProvisioner backs each claim with a directory. For kwok nodes
// nothing mounts it: claims get real, bound hostPath PersistentVolumes. For
// the real node it is a `local` PersistentVolume pinned to the node, which
// the kubelet mounts and gives the pod's fsGroup (it does not for hostPath),
// so non-root database pods can write to it.
type volumeProvisioner struct {
	dir string
	// node is the real node's name; empty for kwok nodes.
	node string
}

var _ controller.Provisioner = volumeProvisioner{}

// Provision creates a directory and a PersistentVolume for the claim.
func (p volumeProvisioner) Provision(_ context.Context, opts controller.ProvisionOptions) (*corev1.PersistentVolume, controller.ProvisioningState, error) {
	path := filepath.Join(p.dir, opts.PVName)
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("creating volume directory: %w", err)
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if opts.StorageClass.ReclaimPolicy != nil {
		reclaim = *opts.StorageClass.ReclaimPolicy
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: opts.PVName},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   opts.PVC.Spec.AccessModes,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: opts.PVC.Spec.Resources.Requests[corev1.ResourceStorage]},
			VolumeMode:                    opts.PVC.Spec.VolumeMode,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr.To(corev1.HostPathDirectory)},
			},
		},
	}
	if p.node != "" {
		pv.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: path}}
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{p.node},
			}}}},
		}}
	}
	return pv, controller.ProvisioningFinished, nil
}

// Delete removes the volume's directory.
func (p volumeProvisioner) Delete(_ context.Context, pv *corev1.PersistentVolume) error {
	path := ""
	switch {
	case pv.Spec.HostPath != nil:
		path = pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		path = pv.Spec.Local.Path
	default:
		return nil
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("removing volume directory: %w", err)
	}
	return nil
}

// startProvisioner runs the provisioner controller until ctx ends, logging
// to logDir/provisioner.log. The provisioner library and client-go log
// through klog's global logger too, so this process's klog output goes
// there as well: a user watching `make run` or a test sees its own lines.
func startProvisioner(ctx context.Context, clientset kubernetes.Interface, provisioner volumeProvisioner, logDir string) error {
	logFile, err := os.OpenFile(filepath.Join(logDir, "provisioner.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening the provisioner's log: %w", err)
	}
	flags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(flags)
	for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		if err := flags.Set(name, value); err != nil {
			return err
		}
	}
	klog.SetOutput(logFile)
	go func() {
		<-ctx.Done()
		klog.Flush()
		logFile.Close()
	}()
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(logFile)))
	pc := controller.NewProvisionController(logger, clientset, ProvisionerName, provisioner,
		controller.LeaderElection(false),
	)
	go pc.Run(ctx)
	return nil
}

// ensureStorageClass creates the default StorageClass when it is missing.
func ensureStorageClass(ctx context.Context, clientset kubernetes.Interface) error {
	class := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: StorageClassName, Annotations: map[string]string{defaultClassAnnotation: "true"}},
		Provisioner:          ProvisionerName,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
		AllowVolumeExpansion: ptr.To(true),
	}
	_, err := clientset.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating StorageClass %s: %w", StorageClassName, err)
	}
	return nil
}
