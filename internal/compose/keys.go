package compose

import (
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// serviceKey is the key of a side's proxy Service.
func serviceKey(role xr.Role) names.Key {
	if role == xr.RoleCanary {
		return names.KeyServiceCanary
	}
	return names.KeyServicePrimary
}

// tlsKey is the key of a side's BackendTLSPolicy.
func tlsKey(role xr.Role) names.Key {
	if role == xr.RoleCanary {
		return names.KeyTLSCanary
	}
	return names.KeyTLSPrimary
}

// kindService is the kind of the proxy Services, and of a Service backend.
const kindService = "Service"
