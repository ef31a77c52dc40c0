package main

import (
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composite"
)

// observedComposite reads the observed XR straight from its protobuf Struct.
// The SDK's request.GetObservedCompositeResource goes through JSON both ways
// (protojson, then encoding/json), which for a request near the gRPC limit
// costs more than all the rest of a run; the Struct's own conversion makes
// the same JSON-typed values (float64 numbers, map[string]any objects).
func observedComposite(req *fnv1.RunFunctionRequest) *resource.Composite {
	xr := &resource.Composite{
		Resource:          composite.New(),
		ConnectionDetails: req.GetObserved().GetComposite().GetConnectionDetails(),
	}
	if s := req.GetObserved().GetComposite().GetResource(); s != nil {
		xr.Resource.Object = s.AsMap()
	}
	if xr.ConnectionDetails == nil {
		xr.ConnectionDetails = make(resource.ConnectionDetails)
	}
	return xr
}
