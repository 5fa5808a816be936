package localcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runtimeClient talks CRI to the node's containerd, as the kubelet does.
type runtimeClient struct {
	conn *grpc.ClientConn
	api  runtimeapi.RuntimeServiceClient
}

func dialRuntime(_ context.Context, socket string) (*runtimeClient, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connecting to containerd at %s: %w", socket, err)
	}
	return &runtimeClient{conn: conn, api: runtimeapi.NewRuntimeServiceClient(conn)}, nil
}

func (r *runtimeClient) close() { r.conn.Close() }

// removeAllSandboxes stops every pod sandbox (which runs CNI DEL and
// unmounts its network namespace) and removes it with its containers.
func (r *runtimeClient) removeAllSandboxes(ctx context.Context) error {
	list, err := r.api.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("listing pod sandboxes: %w", err)
	}
	var errs []error
	for _, sandbox := range list.Items {
		if err := r.stopSandbox(ctx, sandbox.Id); err != nil {
			errs = append(errs, fmt.Errorf("stopping sandbox of %s/%s: %w", sandbox.Metadata.Namespace, sandbox.Metadata.Name, err))
			continue
		}
		if _, err := r.api.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sandbox.Id}); err != nil {
			errs = append(errs, fmt.Errorf("removing sandbox of %s/%s: %w", sandbox.Metadata.Namespace, sandbox.Metadata.Name, err))
		}
	}
	return errors.Join(errs...)
}

// stopSandboxAttempts bounds stopSandbox's tries.
const stopSandboxAttempts = 3

// stopSandbox stops a pod sandbox, trying again after a failure: a
// container whose shim exits as it is killed (a pod the kubelet was
// stopping as it stopped itself) fails the stop with "ttrpc: closed",
// and the next stop finds it gone.
func (r *runtimeClient) stopSandbox(ctx context.Context, id string) error {
	var err error
	for attempt := 1; attempt <= stopSandboxAttempts; attempt++ {
		if _, err = r.api.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err == nil {
			return nil
		}
		if attempt < stopSandboxAttempts {
			select {
			case <-ctx.Done():
				return errors.Join(err, ctx.Err())
			case <-time.After(time.Second):
			}
		}
	}
	return err
}
