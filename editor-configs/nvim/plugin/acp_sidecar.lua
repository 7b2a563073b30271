-- acp-sidecar: nothing happens until require("acp_sidecar").setup() is called.
-- (:checkhealth acp_sidecar finds lua/acp_sidecar/health.lua by itself.)
if vim.g.loaded_acp_sidecar then
  return
end
vim.g.loaded_acp_sidecar = 1
