-- predict.lua: wrk posts one 64-input row to gserve's /v1/predict
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local row = {}
for i = 1, 64 do row[i] = tostring((i * 7) % 17) end
wrk.body = '{"inputs": [[' .. table.concat(row, ",") .. ']]}'
