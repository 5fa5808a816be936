package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
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

// hostPathProvisioner backs each claim with a directory. Nothing mounts it
// (kwok runs no containers); it gives claims real, bound PersistentVolumes.
type hostPathProvisioner struct {
	dir string
}

var _ controller.Provisioner = hostPathProvisioner{}

// Provision creates a directory and a PersistentVolume for the claim.
func (p hostPathProvisioner) Provision(_ context.Context, opts controller.ProvisionOptions) (*corev1.PersistentVolume, controller.ProvisioningState, error) {
	path := filepath.Join(p.dir, opts.PVName)
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("creating volume directory: %w", err)
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if opts.StorageClass.ReclaimPolicy != nil {
		reclaim = *opts.StorageClass.ReclaimPolicy
	}
	return &corev1.PersistentVolume{
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
	}, controller.ProvisioningFinished, nil
}

// Delete removes the volume's directory.
func (p hostPathProvisioner) Delete(_ context.Context, pv *corev1.PersistentVolume) error {
	if pv.Spec.HostPath == nil {
		return nil
	}
	if err := os.RemoveAll(pv.Spec.HostPath.Path); err != nil {
		return fmt.Errorf("removing volume directory: %w", err)
	}
	return nil
}

// startProvisioner runs the provisioner controller until ctx ends.
func startProvisioner(ctx context.Context, clientset kubernetes.Interface, dir string) error {
	pc := controller.NewProvisionController(klog.Background(), clientset, ProvisionerName, hostPathProvisioner{dir: dir},
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
