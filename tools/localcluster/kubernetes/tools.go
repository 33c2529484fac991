//go:build tools

// Package tools records the main packages that tools/local-cluster builds from
// this module, so that `go mod tidy` keeps their dependencies in go.mod/go.sum.
// The build tag keeps this file out of every build (main packages cannot be
// imported); the binaries are built with `go build` by tools/local-cluster.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
