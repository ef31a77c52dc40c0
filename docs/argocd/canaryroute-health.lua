-- Argo CD health check for CanaryRoute (function-canary-route).
--
-- The function writes the rollout's state to status.rollout (phase, reason,
-- message, canaryWeight, awaitingApproval): see docs/rollout.md. Crossplane
-- writes the Synced condition: False with reason ReconcileError when the
-- function returned a Fatal result (Crossplane then keeps the last good
-- status.rollout, which may be stale), False with reason ReconcilePaused
-- under the crossplane.io/paused annotation. The mapping and the decisions
-- are in docs/argocd/README.md.
--
-- Only Lua's base library is used (ipairs, tonumber, tostring), so the check
-- runs with Argo CD's default, restricted libraries.

local function getCondition(conditions, conditionType)
  if conditions == nil then
    return nil
  end
  for _, condition in ipairs(conditions) do
    if condition.type == conditionType then
      return condition
    end
  end
  return nil
end

-- describe is status.rollout.message, else the phase and the canary weight.
local function describe(rollout)
  if rollout.message ~= nil and rollout.message ~= "" then
    return rollout.message
  end
  if rollout.canaryWeight ~= nil then
    return tostring(rollout.phase) .. ": canary " .. tostring(rollout.canaryWeight) .. "%"
  end
  return tostring(rollout.phase)
end

local hs = {}

if obj.status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the function to report"
  return hs
end

local synced = getCondition(obj.status.conditions, "Synced")

-- Crossplane sets observedGeneration on its conditions: until it has
-- reconciled the current spec, the status describes an older one.
if synced ~= nil and obj.metadata ~= nil then
  local observedGeneration = tonumber(synced.observedGeneration)
  local generation = tonumber(obj.metadata.generation)
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
  hs.message = synced.message
  return hs
end

local rollout = obj.status.rollout
if rollout == nil or rollout.phase == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the function to report"
  return hs
end

local phase = rollout.phase
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
  hs.message = "Unknown rollout phase " .. tostring(phase)
  return hs
end
hs.message = describe(rollout)
return hs
