/** The playground's CSS (see playground.ts): inline, because the page's CSP loads nothing else. */
export const PLAYGROUND_STYLE = `
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 system-ui, sans-serif; background: #f6f7f9; color: #1d2330; display: flex; flex-direction: column; height: 100vh; }
  header { display: flex; gap: 12px; align-items: center; flex-wrap: wrap; padding: 10px 16px; background: #fff; border-bottom: 1px solid #dde1e7; }
  header h1 { font-size: 15px; margin: 0 8px 0 0; }
  header nav { margin-left: auto; }
  a { color: #2f6feb; }
  label { display: flex; gap: 6px; align-items: center; color: #5a6270; }
  input, textarea { font: inherit; padding: 6px 8px; border: 1px solid #c8ced8; border-radius: 6px; }
  #api-key { width: 260px; }
  #thread-id { font-family: ui-monospace, monospace; color: #1d2330; min-width: 120px; }
  button { font: inherit; padding: 6px 14px; border: 1px solid #c8ced8; border-radius: 6px; background: #fff; cursor: pointer; }
  button.primary { background: #2f6feb; border-color: #2f6feb; color: #fff; }
  button:disabled { opacity: 0.5; cursor: default; }
  #layout { flex: 1; display: flex; min-height: 0; }
  aside { width: 270px; flex: none; overflow-y: auto; background: #fff; border-right: 1px solid #dde1e7; padding: 10px 12px; display: flex; flex-direction: column; gap: 12px; }
  aside h2 { font-size: 12px; text-transform: uppercase; letter-spacing: 0.04em; color: #5a6270; margin: 0 0 6px; display: flex; align-items: center; justify-content: space-between; }
  aside h2 button { padding: 2px 8px; font-size: 12px; }
  #threads { list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: 4px; }
  #threads button { width: 100%; text-align: left; padding: 5px 8px; border-color: #e2e6ec; display: flex; flex-direction: column; }
  #threads button.active { border-color: #2f6feb; background: #eef4ff; }
  #threads .id { font: 12px/1.3 ui-monospace, monospace; word-break: break-all; }
  #threads .when { font-size: 11px; color: #6b7280; }
  .note { font-size: 12px; color: #6b7280; margin: 0; }
  .note.failed { color: #b42318; }
  #card-panel summary { cursor: pointer; font-weight: 600; }
  #card .field { font-size: 12px; color: #5a6270; margin-top: 4px; word-break: break-all; }
  #card pre { margin: 6px 0 0; font: 11px/1.35 ui-monospace, monospace; background: #f3f5f8; border: 1px solid #e2e6ec; border-radius: 6px; padding: 6px; white-space: pre-wrap; word-break: break-all; }
  #transcript { flex: 1; overflow-y: auto; padding: 16px; display: flex; flex-direction: column; gap: 10px; }
  .bubble { max-width: 80%; padding: 8px 12px; border-radius: 10px; white-space: pre-wrap; word-wrap: break-word; }
  .user { align-self: flex-end; background: #2f6feb; color: #fff; }
  .assistant { align-self: flex-start; background: #fff; border: 1px solid #dde1e7; }
  .error { align-self: flex-start; background: #fdecec; border: 1px solid #f1b0b0; color: #8a1c1c; }
  .error pre { margin: 6px 0 0; font: 12px/1.4 ui-monospace, monospace; white-space: pre-wrap; word-break: break-all; }
  .tool { align-self: flex-start; max-width: 80%; font: 12px/1.4 ui-monospace, monospace; background: #eef1f6; border: 1px solid #d3d9e3; border-radius: 8px; padding: 6px 10px; }
  .tool pre { margin: 4px 0 0; white-space: pre-wrap; word-break: break-all; }
  .tool .label { border-top: 1px dashed #c3cad6; margin-top: 6px; padding-top: 4px; font-weight: 600; }
  .tool.ok .label { color: #067647; }
  .tool.failed { border-color: #f1b0b0; }
  .tool.failed .label, .tool.failed pre.result { color: #b42318; }
  .tool.rejected { background: #f4f5f7; border-color: #d99a9a; }
  .tool.rejected .label { color: #8a1c1c; }
  .tool.rejected pre.result { color: #5a6270; }
  .meta { align-self: flex-start; font-size: 12px; color: #6b7280; }
  .meta.warn { color: #b54708; font-weight: 600; }
  .approval { align-self: flex-start; width: min(80%, 640px); display: flex; flex-direction: column; gap: 6px; background: #fff8e8; border: 1px solid #f0c36d; border-radius: 8px; padding: 8px 12px; }
  .approval .title { font-weight: 600; font-family: ui-monospace, monospace; word-break: break-all; }
  .approval .field { font-size: 12px; color: #5a6270; white-space: pre-wrap; word-wrap: break-word; }
  .approval pre { margin: 0; font: 12px/1.4 ui-monospace, monospace; background: #fff; border: 1px solid #eadfc4; border-radius: 6px; padding: 4px 8px; white-space: pre-wrap; word-break: break-all; }
  .approval textarea { resize: vertical; min-height: 36px; }
  .approval .actions { display: flex; gap: 8px; align-items: center; }
  .approval .status { font-size: 12px; font-weight: 600; }
  .approval .status.failed, .approval .status.rejected, .approval .status.expired { color: #b42318; }
  .approval .status.approved { color: #067647; }
  .approval.decided { background: #f4f5f7; border-color: #d3d9e3; }
  .approval.decided textarea, .approval.decided .actions { display: none; }
  .approval.rejected, .approval.expired { border-color: #d99a9a; }
  footer { display: flex; gap: 8px; padding: 10px 16px; background: #fff; border-top: 1px solid #dde1e7; }
  #message { flex: 1; resize: vertical; min-height: 44px; }
`;
