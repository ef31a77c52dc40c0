// Command echo is the floor that every composition function pays: it serves
// the function gRPC API exactly as function-canary-route does (the same SDK,
// the same server options) and answers each request with its desired state
// copied, doing nothing else. hack/bench measures both side by side.
//
// With -replay it answers every request with one response read from a file
// instead: the floor of a function whose answer is as large as the real
// one's, which tells the cost of the messages from the cost of the work.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"google.golang.org/protobuf/proto"

	"github.com/crossplane/function-sdk-go"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"
)

type echo struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	replay *fnv1.RunFunctionResponse
}

// RunFunction copies the request's desired state into the response, or
// answers with the response to replay.
func (e echo) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	if e.replay != nil {
		return e.replay, nil
	}
	return response.To(req, response.DefaultTTL), nil
}

func main() {
	address := flag.String("address", "127.0.0.1:9443", "address to serve gRPC on, without TLS")
	maxRecv := flag.Int("max-recv-message-size", 4, "largest request, in MB")
	replay := flag.String("replay", "", "a file holding a serialized RunFunctionResponse to answer every request with")
	flag.Parse()
	var e echo
	if *replay != "" {
		b, err := os.ReadFile(*replay)
		if err == nil {
			e.replay = &fnv1.RunFunctionResponse{}
			err = proto.Unmarshal(b, e.replay)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	err := function.Serve(e,
		function.Listen("tcp", *address),
		function.Insecure(true),
		function.MaxRecvMessageSize(*maxRecv*1024*1024),
		function.WithMetricsServer(""))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
