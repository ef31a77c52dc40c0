// Command echo is the floor that every composition function pays: it serves
// the function gRPC API exactly as function-canary-route does (the same SDK,
// the same server options) and answers each request with its desired state
// copied, doing nothing else. hack/bench measures both side by side.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/crossplane/function-sdk-go"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"
)

type echo struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
}

// RunFunction copies the request's desired state into the response.
func (echo) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	return response.To(req, response.DefaultTTL), nil
}

func main() {
	address := flag.String("address", "127.0.0.1:9443", "address to serve gRPC on, without TLS")
	maxRecv := flag.Int("max-recv-message-size", 4, "largest request, in MB")
	flag.Parse()
	err := function.Serve(echo{},
		function.Listen("tcp", *address),
		function.Insecure(true),
		function.MaxRecvMessageSize(*maxRecv*1024*1024),
		function.WithMetricsServer(""))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
