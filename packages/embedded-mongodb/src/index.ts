export { startEmbeddedServer, type Clock, type EmbeddedServer, type EmbeddedServerOptions } from './server.js';
