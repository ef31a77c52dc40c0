-- Argo CD health check for CanaryRoute (function-canary-route).
--
-- The function writes the rollout's state to status.rollout (phase, reason,
-- message, canaryWeight, awaitingApproval): see docs/rollout.md. Crossplane
-- writes the Synced condition: False with reason ReconcileError when the
-- function returned a Fatal result (Crossplane then keeps the last good
-- status.rollout, which may be stale), False with reason ReconcilePaused
-- under the crossplane.io/paused annotation. The function's own condition
-- Composed is False while it refuses the CanaryRoute: a claim has no Synced
-- of its XR's, but it has Composed. The mapping and the decisions are in
-- docs/argocd/README.md.
--
-- Only Lua's base library is used (ipairs, type, tonumber, tostring), so the
-- check runs with Argo CD's default, restricted libraries. Every value is
-- checked for its type before it is read: a status written by hand may hold
-- anything, and a Lua error would show as an error in Argo CD, not a health.

-- asTable returns v if it is a table, else nil.
local function asTable(v)
  if type(v) == "table" then
    return v
  end
  return nil
end

-- asText returns v if it is a string, else nil: Argo CD decodes the message
-- as a string, and fails on anything else.
local function asText(v)
  if type(v) == "string" then
    return v
  end
  return nil
end

local function getCondition(conditions, conditionType)
  if asTable(conditions) == nil then
    return nil
  end
  for _, condition in ipairs(conditions) do
    if asTable(condition) ~= nil and condition.type == conditionType then
      return condition
    end
  end
  return nil
end

-- describe is status.rollout.message, else the phase and the canary weight.
local function describe(rollout, phase)
  local message = asText(rollout.message)
  if message ~= nil and message ~= "" then
    return message
  end
  local weight = tonumber(rollout.canaryWeight)
  if weight ~= nil then
    return phase .. ": canary " .. tostring(weight) .. "%"
  end
  return phase
end

local hs = {}

local status = asTable(obj.status)
if status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the function to report"
  return hs
end

local synced = getCondition(status.conditions, "Synced")
local metadata = asTable(obj.metadata)

-- Crossplane sets observedGeneration on its conditions: until it has
-- reconciled the current spec, the status describes an older one.
if synced ~= nil and metadata ~= nil then
  local observedGeneration = tonumber(synced.observedGeneration)
  local generation = tonumber(metadata.generation)
  if observedGeneration ~= nil and generation ~= nil and observedGeneration < generation then
    hs.status = "Progressing"
    hs.message = "Waiting for Crossplane to reconcile generation " .. tostring(generation)
    return hs
  end
end

if synced ~= nil and synced.status == "False" then
  if synced.reason == "ReconcilePaused" then
    hs.status = "Suspended"
  else
    -- A Fatal result: nothing was applied, status.rollout may be stale.
    hs.status = "Degraded"
  end
  hs.message = asText(synced.message)
  return hs
end

-- The function refuses the CanaryRoute (a Fatal): the same on a claim,
-- which carries the XR's Composed condition but not its Synced.
local composed = getCondition(status.conditions, "Composed")
if composed ~= nil and composed.status == "False" then
  hs.status = "Degraded"
  hs.message = asText(composed.message)
  return hs
end

local rollout = asTable(status.rollout)
if rollout == nil or rollout.phase == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the function to report"
  return hs
end

local phase = asText(rollout.phase)
if phase == "Stable" or phase == "Succeeded" then
  hs.status = "Healthy"
elseif phase == "Progressing" then
  if rollout.awaitingApproval == true then
    -- A step waiting for a person is suspended, as Argo Rollouts' pause is.
    hs.status = "Suspended"
  else
    hs.status = "Progressing"
  end
elseif phase == "Paused" then
  hs.status = "Suspended"
elseif phase == "Failed" or phase == "Aborted" then
  hs.status = "Degraded"
else
  hs.status = "Unknown"
  hs.message = "Unknown rollout phase " .. (phase or ("of type " .. type(rollout.phase)))
  return hs
end
hs.message = describe(rollout, phase)
return hs
