/**
 * The cookie of a flow of the pipeline: the configured prefix with the flow's kind, value and
 * flags (./flow-cookie.ts). One helper for every module that builds the pipeline's flows, so
 * that each flow's cookie is made from its configuration the same way.
 */
import type { PipelineConfig } from './config.js';
import { encodeFlowCookie, type FlowKind } from './flow-cookie.js';

export function pipelineCookie(config: PipelineConfig, kind: FlowKind, value: number, flags = 0): bigint {
  return encodeFlowCookie({ prefix: config.cookiePrefix, kind, value, flags });
}
