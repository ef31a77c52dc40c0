// Command etcd is etcd's own server (etcdmain), built at the version that
// k8s.io/kubernetes requires, so the live tests need no etcd package from
// the system.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
