// The GPU catalog (GET /gpu-models), fetched once per page load.
import * as api from "./api";

let cached: Promise<api.GpuModel[]> | null = null;

export function gpuModels(signal?: AbortSignal): Promise<api.GpuModel[]> {
  if (!cached) {
    cached = api.get<{ items: api.GpuModel[] }>("/gpu-models", { signal }).then((p) => p.items);
    cached.catch(() => {
      cached = null; // try again next time
    });
  }
  return cached;
}

export async function modelMap(signal?: AbortSignal): Promise<Map<string, api.GpuModel>> {
  return new Map((await gpuModels(signal)).map((m) => [m.id, m]));
}
